"""os-acc end to end: the test process is the compute driver.

cyborg-conductor, -api and -agent run as separate processes over RabbitMQ,
MariaDB and a real Placement served over HTTP (``deployment``); the test
loads a compute node's cyborg.conf with ``os_acc.configure`` and calls
``initialize``, ``plug`` and ``unplug`` as a driver would. What it gets is
checked against the database (attach handles), the ARQ API (what Nova
would see) and Placement (no allocation is left), also across a restart
of the conductor and of the agent.
"""

import os
import uuid

from cyborg import rpc
from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import test_arq_processes as scenario
from os_acc import api as os_acc_api
import os_acc

WAIT_TIMEOUT = scenario.WAIT_TIMEOUT
REGION_A_SPECS = {'resources:FPGA': '1',
                  'trait:%s' % scenario.region_trait(scenario.REGION_A_ID):
                      'required',
                  'resources:VCPU': '2', 'hw:cpu_policy': 'dedicated'}


def new_instance(name):
    return {'uuid': str(uuid.uuid4()), 'name': name,
            'project_id': uuid.uuid4().hex, 'image_uuid': str(uuid.uuid4())}


def pci_id(info):
    return '%04x:%02x:%02x.%x' % tuple(
        int(info[key], 16) for key in ('domain', 'bus', 'device', 'function'))


class OsAccProcessesMixin(scenario.ArqProcessesMixin):
    """The ARQ scenario's deployment, driven through os-acc."""

    def _configure_compute_node(self):
        """Load a compute node's cyborg.conf in this process, as os-acc's
        caller would: the broker of the services and the agent's host."""
        path = os.path.join(self.state_path, 'compute-node.conf')
        processes.write_config(path, {
            'DEFAULT': {'transport_url': self.rabbit.transport_url,
                        'control_exchange': self.rabbit.control_exchange,
                        'host': self.host, 'rpc_response_timeout': 10},
            'conductor': {'bind_timeout': 30},
        })
        self.addCleanup(self._forget_os_acc)
        os_acc.configure(config_files=[path])

    @staticmethod
    def _forget_os_acc():
        rpc.cleanup()
        with os_acc_api._State.lock:
            os_acc_api._State.configured = False
            os_acc_api._State.conductor = None

    def _in_use(self, rp_uuid):
        """{handle uuid: pci_id} of the provider's handles in use."""
        return {handle_uuid: pci_id(info) for handle_uuid, (_, _, info, used)
                in self._handles(rp_uuid).items() if used}

    def _arqs_of(self, instance):
        return self._expect(200, 'GET', '/v2/accelerator_requests?instance=%s'
                            % instance['uuid'])['arqs']

    def _allocations(self, rp_uuid):
        answer = self.placement.adapter.get(
            '/resource_providers/%s/allocations' % rp_uuid)
        self.assertEqual(200, answer.status_code, answer.text)
        return answer.json()['allocations']

    def _restart_conductor(self):
        """Stop the conductor (SIGTERM) and start a new one."""
        self.assertEqual(0, self.conductor.stop()[0], self._logs())
        self.services.remove(self.conductor)
        self.conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', self.conductor_config))
        self.services.append(self.conductor)


class OsAccLifecycleTestsMixin(OsAccProcessesMixin):

    def test_plug_and_unplug_through_os_acc(self):
        deployables = self._start_services(
            {'fpgas': [scenario.FPGA_A, scenario.FPGA_B],
             'gpus': [scenario.T4_GPU]},
            {'conductor': {'bind_sweep_interval': 1, 'bind_timeout': 30}})
        region_a = deployables[scenario.REGION_A]['rp_uuid']
        vgpu = deployables[scenario.VGPU_T4_1B]['rp_uuid']
        self._configure_compute_node()

        # 1. The agent has reported and Placement has its providers.
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))

        # 2. Plug: one PCI handle of region A, as the API shows it too.
        first = new_instance('first')
        plugged = os_acc.plug(first, {'uuid': region_a, 'name': 'region-a'},
                              REGION_A_SPECS)
        self.assertEqual(list(self._in_use(region_a).values()),
                         [entry['pci_id'] for entry in plugged])
        arqs = self._arqs_of(first)
        self.assertEqual(1, len(arqs))
        self._assert_bound(arqs[0], region_a, first['uuid'])
        self.assertEqual(pci_id(arqs[0]['attach_handle_info']),
                         plugged[0]['pci_id'])

        # 3. Idempotent: the same answer, no second handle.
        self.assertEqual(plugged, os_acc.plug(first, {'uuid': region_a},
                                              REGION_A_SPECS))
        self.assertEqual(1, len(self._in_use(region_a)))
        self.assertEqual(1, self._arq_count())

        # 4. A second instance takes the other handle; a third finds none
        # and holds nothing afterwards.
        second = new_instance('second')
        other = os_acc.plug(second, {'uuid': region_a}, REGION_A_SPECS)
        self.assertNotEqual(plugged, other)
        third = new_instance('third')
        error = self.assertRaises(os_acc.PlugFailed, os_acc.plug, third,
                                  {'uuid': region_a}, REGION_A_SPECS)
        self.assertIn('no free attach handle', str(error))
        self.assertEqual([], self._arqs_of(third))
        self.assertEqual(2, self._arq_count())

        # 5. A restarted conductor answers from the database.
        self._restart_conductor()
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        self.assertEqual(plugged, os_acc.plug(first, {'uuid': region_a},
                                              REGION_A_SPECS))

        # 6. So after the agent was killed and started again.
        self.agent.kill()
        self._restart_agent()
        self._wait_for_reports(1, 'the restarted agent')
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        self.assertEqual(plugged, os_acc.plug(first, {'uuid': region_a},
                                              REGION_A_SPECS))
        self.assertEqual(2, len(self._in_use(region_a)))

        # 7. A vGPU: its mediated device.
        fourth = new_instance('fourth')
        mdev = os_acc.plug(fourth, {'uuid': vgpu}, {'resources:VGPU': '1'})
        arq = self._arqs_of(fourth)[0]
        self.assertEqual([{'mdev_uuid':
                           arq['attach_handle_info']['mdev_uuid']}], mdev)

        # 8. Unplug: each instance's count, nothing held, nothing left in
        # Placement's allocations.
        self.assertEqual([1, 1, 1, 0], [os_acc.unplug(instance) for instance
                                        in (first, second, fourth, third)])
        self.assertEqual(0, os_acc.unplug({'uuid': first['uuid']}))
        self.assertEqual(0, self._arq_count())
        self._assert_handles_free(region_a)
        self._assert_handles_free(vgpu)
        self.assertEqual({}, self._allocations(region_a))
        self.assertEqual({}, self._allocations(vgpu))

        # 9. Every service stops cleanly.
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])


class TestOsAccLifecycleMySQL(OsAccLifecycleTestsMixin, base.TestCase):
    backend = 'mysql'


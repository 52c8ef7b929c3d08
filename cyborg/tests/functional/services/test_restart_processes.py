"""Restarting the services keeps a programmed region; a power cycle empties it.

cyborg-api, -conductor and -agent run as processes over RabbitMQ, MariaDB,
a real Placement and a real Glance (the deployment of
``test_program_processes``). Region0 of the simulated Intel card is
programmed through the API (its function and a topology of 2 PFs of 3 VFs
replace the fleet file's function and 1 PF of 2 VFs). Then:

* the agent and the conductor stop and start again: the new agent's
  reports keep the region as it was, ``bitstream_id``, PF/VF tree and
  function trait in Placement;
* the agent stops, the fake driver's state file is removed (the power
  cycle) and the agent starts again: the region reports blank and its
  record follows, no ``bitstream_id``, the fleet file's tree and function
  trait back, in the database and in Placement.
"""

import os

from cyborg.agent.drivers import fake_state
from cyborg.clients import glance as glance_client
from cyborg import conf
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import test_program_processes as cases

NEW_TRAIT = cases.FUNCTION_TRAIT + \
    cases.NEW_FUNCTION.replace('-', '').upper()
OLD_TRAIT = cases.FUNCTION_TRAIT + cases.OLD_FUNCTION.upper()


class RestartProcessesTest(cases.deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'

    # The deployment, the readers and the Glance helpers of the
    # programming test.
    _regions = cases.ProgramProcessesTest._regions
    _in_placement = cases.ProgramProcessesTest._in_placement
    _deployable = cases.ProgramProcessesTest._deployable
    _rows_under = cases.ProgramProcessesTest._rows_under
    _traits = cases.ProgramProcessesTest._traits
    _function_traits = cases.ProgramProcessesTest._function_traits
    _image = cases.ProgramProcessesTest._image
    _program = cases.ProgramProcessesTest._program

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        conductor = dict(glance_options, conductor={'program_timeout': 20})
        self._start_services(cases.FLEET, conductor_options=conductor,
                             agent_options=glance_options)
        self.images = glance_client.GlanceClient(conf.CONF)
        self.regions = self._wait_until(self._regions, 'the first report')
        self._wait_until(self._in_placement, 'the first report in Placement')

    def _expected_tree(self, region, pfs, vfs_per_pf):
        return sorted(
            ['%s-pf%d' % (region['name'], pf) for pf in range(pfs)] +
            ['%s-pf%d-vf%d' % (region['name'], pf, vf)
             for pf in range(pfs) for vf in range(vfs_per_pf)])

    def _record(self, region):
        """(bitstream_id, tree and handles, function traits) of ``region``."""
        return (self._deployable(region['uuid'])['bitstream_id'],
                self._rows_under(region), self._function_traits(region))

    def _restart_conductor(self):
        self.services.remove(self.conductor)
        self.conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', self.conductor_config))
        self.services.append(self.conductor)

    def _stop(self, service):
        exit_code, _ = service.stop(timeout=25)
        self.assertEqual(0, exit_code, self._logs())

    def test_a_restart_keeps_the_region_and_a_power_cycle_empties_it(self):
        region, _ = self.regions
        image_id = self._image()
        status, answer = self._program(region, image_id)
        self.assertEqual(200, status, '%s\n%s' % (answer, self._logs()))
        programmed = (image_id, (self._expected_tree(region, 2, 3), 6),
                      {NEW_TRAIT})
        self._wait_until(lambda: self._record(region) == programmed,
                         'the programmed region in the database and '
                         'Placement')
        state_file = fake_state.state_file(self.state_path, self.host)
        self.assertTrue(os.path.exists(state_file))

        # The agent and the conductor restart; the card keeps its image.
        self._stop(self.agent)
        self._stop(self.conductor)
        self._restart_conductor()
        self._restart_agent()
        # The second report begins once the first (and its Placement
        # sync) is done.
        self._wait_for_reports(2, 'after the restart')

        self.assertEqual(programmed, self._record(region))
        self.assertIn('hold what was loaded before the restart',
                      self.agent.log())
        inventory = self.placement.adapter.get(
            '/resource_providers/%s/inventories' % region['rp_uuid']).json()
        self.assertEqual(6, inventory['inventories']['FPGA']['total'])

        # The power cycle: the agent stops and the card loses its image.
        self._stop(self.agent)
        os.unlink(state_file)
        self._restart_agent()
        self._wait_for_reports(2, 'after the power cycle')

        self.assertEqual(
            (None, (self._expected_tree(region, 1, 2), 2), {OLD_TRAIT}),
            self._record(region))
        inventory = self.placement.adapter.get(
            '/resource_providers/%s/inventories' % region['rp_uuid']).json()
        self.assertEqual(2, inventory['inventories']['FPGA']['total'])
        self.assertIn('no longer holds image %s' % image_id,
                      self.conductor.log())
        for service in (self.agent, self.conductor, self.api):
            self.assertNotIn('Traceback', service.log(), service.script)

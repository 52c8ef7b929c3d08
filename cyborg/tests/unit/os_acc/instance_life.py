"""Two compute nodes, and the two ways an instance's accelerators are driven.

``InstanceLifeTestsBase`` adds to ``compute_node``'s node (HOST, its
agent, a conductor, Placement) a second compute node, HOST_B, with its own
agent and fake devices; the real WSGI application of the API (noauth:
every request is Nova's, with a service token); and the conductor's binder
running, as the service runs it. An instance then goes through the
instance operations either way:

* ``OsAccDriver``: a compute driver with os-acc, ``plug`` on the compute
  node the instance lands on (os-acc acts as ``[DEFAULT] host``), and
  ``unplug``;
* ``NovaDriver``: Nova's cyborg client through the API: ``POST
  /v2/accelerator_requests`` with the flavor's profile, ``PATCH`` binding
  each ARQ to host, provider and instance, ``GET ?instance=<uuid>&
  bind_state=resolved`` until it is resolved (Nova waits for the bound
  events; ``[nova]`` is not configured here, so the test asks again),
  ``DELETE ?instance=<uuid>``.

Both answer attachments in os-acc's shape, so that a test can compare
them; ``held`` is what the database holds afterwards. ``both_ways`` plays
one life each way on the same instance and checks they end the same.
"""

import contextlib
import os
import time
import uuid

import sqlalchemy as sa
import webob

from cyborg import conf
from cyborg import policies
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.api import app
from cyborg.api import auth
from cyborg.db import models
from cyborg.tests.unit.os_acc import compute_node
from os_acc import attachments
import os_acc

HOST = compute_node.HOST
HOST_B = 'compute-os-acc-b'
# HOST_B: one FPGA whose region has four VFs.
INVENTORY_B = """
fpgas:
  - attach_type: PCI
    regions: [{pfs: 1, vfs_per_pf: 4}]
"""
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
ONE_FPGA = 'one-fpga'
TWO_FPGAS = 'two-fpgas'
# Flavors as Nova holds them: a profile, and Nova's own resources.
FLAVOR = {'accel:device_profile': ONE_FPGA, 'resources:VCPU': '2'}
BIG_FLAVOR = {'accel:device_profile': TWO_FPGAS, 'resources:VCPU': '4'}
# How long NovaDriver waits for a bind to resolve (seconds).
RESOLVE_TIMEOUT = 30
Device = models.Device.__table__
Deployable = models.Deployable.__table__


class BindFailed(Exception):
    """NovaDriver: a bind ended BindFailed (Nova then deletes the ARQs)."""


class Refused(Exception):
    """NovaDriver: the API refused a call; ``status`` and ``body``."""

    def __init__(self, status, body):
        self.status = status
        self.body = body
        super().__init__('%s: %s' % (status, body))


class OsAccDriver:
    """A compute driver with os-acc, on whichever node ``test`` says."""

    name = 'os-acc'

    def __init__(self, test):
        self.test = test

    def start(self, instance, host, rp_uuid, flavor):
        """plug, as the compute node ``host``; its attachments."""
        with self.test.on_compute_node(host):
            return os_acc.plug(instance, {'uuid': rp_uuid}, flavor)

    def attachments(self, instance, host, rp_uuid, flavor):
        """What a driver rebuilding the instance gets: plug again."""
        return self.start(instance, host, rp_uuid, flavor)

    def release(self, instance):
        """unplug; how many handles were released."""
        return os_acc.unplug(instance)

    def live_migrate(self, instance, host, rp_uuid, flavor):
        """Ask os-acc before live migrating: refused with accelerators.

        :raises: os_acc.Unsupported
        """
        return os_acc.live_migrate(instance, flavor)

    def snapshot(self, instance, flavor):
        """Ask os-acc before taking a snapshot: refused with accelerators.

        :raises: os_acc.Unsupported
        """
        return os_acc.snapshot(instance, flavor)


class NovaDriver:
    """Nova's calls to the ARQ API, through the real WSGI application."""

    name = 'ARQ API'

    def __init__(self, test):
        self.test = test

    def start(self, instance, host, rp_uuid, flavor):
        """Create the profile's ARQs, bind them, wait until resolved."""
        arqs = self.test.api(201, 'POST', '/v2/accelerator_requests', {
            'device_profile_name': flavor['accel:device_profile']})['arqs']
        self.test.api(202, 'PATCH', '/v2/accelerator_requests', {
            arq['uuid']: bind_ops(host, rp_uuid, instance['uuid'])
            for arq in arqs})
        return self.attachments(instance, host, rp_uuid, flavor)

    def attachments(self, instance, host=None, rp_uuid=None, flavor=None):
        """The attachments of the instance's resolved ARQs.

        :raises: BindFailed, after deleting the ARQs as Nova does
        """
        arqs = self.resolved(instance)
        failed = [arq for arq in arqs if arq['state'] != 'Bound']
        if failed:
            self.release(instance)
            raise BindFailed(failed)
        return [attachments.attachment(arq['attach_handle_type'],
                                       arq['attach_handle_info'])
                for arq in arqs]

    def resolved(self, instance):
        """GET ?instance=&bind_state=resolved until 200 (423 before)."""
        path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
                % instance['uuid'])
        deadline = time.monotonic() + RESOLVE_TIMEOUT
        while True:
            status, body = self.test.request('GET', path)
            if status == 200:
                return body['arqs']
            self.test.assertEqual(423, status, body)
            if time.monotonic() > deadline:
                self.test.fail('ARQs of %s unresolved after %s s'
                               % (instance['uuid'], RESOLVE_TIMEOUT))
            time.sleep(0.05)

    def release(self, instance):
        """DELETE the instance's ARQs; how many handles they held."""
        held = len(self.test.held_handles(instance))
        self.test.api(204, 'DELETE', '/v2/accelerator_requests?instance=%s'
                      % instance['uuid'])
        return held

    def live_migrate(self, instance, host, rp_uuid, flavor):
        """Bind new ARQs on the destination while the source's are Bound,
        as a live migration would need; refused, the new ARQs are deleted
        as Nova deletes the ARQs of a failed bind.

        :raises: Refused with the API's answer
        """
        arqs = self.test.api(201, 'POST', '/v2/accelerator_requests', {
            'device_profile_name': flavor['accel:device_profile']})['arqs']
        status, body = self.test.request('PATCH', '/v2/accelerator_requests', {
            arq['uuid']: bind_ops(host, rp_uuid, instance['uuid'])
            for arq in arqs})
        self.test.api(204, 'DELETE', '/v2/accelerator_requests?arqs=%s'
                      % ','.join(arq['uuid'] for arq in arqs))
        if status != 202:
            raise Refused(status, body)
        return None

    def snapshot(self, instance, flavor):
        """Nova tells Cyborg nothing of a snapshot: no call."""
        return None


def bind_ops(host, rp_uuid, instance_uuid):
    """The JSON patch binding one ARQ, as Nova sends it."""
    return [{'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance_uuid}]


def new_instance(name='vm'):
    """instance_info of a new instance of the API's (noauth) project, so
    that its ARQs belong to the same project either way."""
    return {'uuid': str(uuid.uuid4()), 'name': name,
            'project_id': auth.NOAUTH_PROJECT_ID,
            'image_uuid': str(uuid.uuid4())}


class InstanceLifeTestsBase(compute_node.ComputeNodeTestsBase):
    """HOST and HOST_B, the API application and a running binder."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        self.application = app.setup_app()
        self.conductor.binder.start()
        self.addCleanup(self.conductor.binder.stop)
        path = os.path.join(os.path.dirname(self.inventory_path),
                            'inventory-b.yaml')
        with open(path, 'w') as stream:
            stream.write(INVENTORY_B)
        self.driver_b = fake.FakeDriver(path, host=HOST_B)
        agent = agent_manager.AgentManager(host=HOST_B, driver_names=[])
        agent.drivers = {'fake_driver': self.driver_b}
        self.messaging.serve(agent_rpcapi.TOPIC, HOST_B, [agent])
        agent.heartbeat(self.context)
        self.assertTrue(agent.report_inventory(self.context))
        self.provider_b = self.providers_of(HOST_B)[0]
        for name, count in ((ONE_FPGA, '1'), (TWO_FPGAS, '2')):
            self.api(201, 'POST', '/v2/device_profiles', [
                {'name': name, 'groups': [dict(GROUP, **{
                    'resources:FPGA': count})]}])
        self.drivers = (OsAccDriver(self), NovaDriver(self))

    # -- The API and the compute nodes --------------------------------------

    def request(self, method, path, body=None):
        """One request to the API application; (status, decoded body)."""
        request = webob.Request.blank(path, method=method, headers={
            'Accept': 'application/json'})
        if body is not None:
            request.json_body = body
            request.content_type = 'application/json'
        response = request.get_response(self.application)
        return response.status_int, (response.json_body if response.body
                                     else None)

    def api(self, status, method, path, body=None):
        """A request that must answer ``status``; the decoded body."""
        answer_status, answer = self.request(method, path, body)
        self.assertEqual(status, answer_status,
                         '%s %s %s: %s' % (method, path, body, answer))
        return answer

    @contextlib.contextmanager
    def on_compute_node(self, host):
        """os-acc's calls act as the compute node ``host`` meanwhile."""
        conf.CONF.set_override('host', host)
        try:
            yield
        finally:
            conf.CONF.set_override('host', HOST)

    def stop_agent(self):
        """Stop the agent of HOST, as when its host fails."""
        self._stop(self.agent_server)

    # -- The database ------------------------------------------------------

    def providers_of(self, host):
        """The resource providers of ``host``'s deployables, by name."""
        return [row.rp_uuid for row in self.query(
            sa.select(Deployable.c.rp_uuid).join(
                Device, Device.c.id == Deployable.c.device_id).where(
                Device.c.hostname == host,
                Deployable.c.rp_uuid.is_not(None)).order_by(
                Deployable.c.name))]

    def held_handles(self, instance):
        """(host, provider) of each handle the instance's ARQs hold."""
        return sorted((row.hostname, row.device_rp_uuid)
                      for row in self.arq_rows(instance['uuid'])
                      if row.attach_handle_id is not None)

    def held(self):
        """Every ARQ (instance, state, host, provider, profile, project,
        handle) and every handle in use: what a way leaves behind."""
        statement = sa.select(
            compute_node.ARQ.c.instance_uuid, compute_node.ARQ.c.state,
            compute_node.ARQ.c.hostname, compute_node.ARQ.c.device_rp_uuid,
            compute_node.DeviceProfile.c.name,
            compute_node.ARQ.c.project_id,
            compute_node.ARQ.c.attach_handle_id,
        ).join(compute_node.DeviceProfile,
               compute_node.DeviceProfile.c.id ==
               compute_node.ARQ.c.device_profile_id)
        return (sorted(tuple(row) for row in self.query(statement)),
                self.handles_in_use())

    # -- Both ways ---------------------------------------------------------

    def both_ways(self, life):
        """Play ``life(driver, instance)`` with os-acc, then with the ARQ
        API, on the same instance; check both return the same (``held()``
        at the steps each compares) and leave the same behind.

        After each way the instance is unplugged: nothing may be held.
        """
        instance = new_instance()
        outcomes = {}
        for driver in self.drivers:
            steps = life(driver, instance)
            outcomes[driver.name] = (steps, self.held())
            os_acc.unplug(instance)
            self.assertEqual(([], []), self.held(), driver.name)
        self.assertEqual(outcomes['os-acc'], outcomes['ARQ API'])
        return outcomes['os-acc']

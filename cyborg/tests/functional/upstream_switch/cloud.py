"""A cloud on a real upstream Cyborg, as the switch tests drive it.

``UpstreamCloudMixin`` does what Nova and a cloud's users do with an
upstream Cyborg 17.0.0 (``self.upstream``: the fixture of
``cyborg.tests.fixtures.upstream_cyborg``) and reads Placement
(``self.placement``: a served ``PlacementFixture``) as the tests compare
it before and after the switch. ``seen_by_nova`` is what Nova reads of
ARQs, so that upstream's answer and this service's compare equal.
"""

import uuid

from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.services.test_arq_processes import bind_ops

# What an ARQ tells Nova, compared before and after the switch.
ARQ_FIELDS = ('uuid', 'state', 'device_profile_name',
              'device_profile_group_id', 'hostname', 'device_rp_uuid',
              'instance_uuid', 'attach_handle_type', 'attach_handle_uuid')


def pci_address(info):
    """An attach handle's PCI address as numbers, whatever the padding."""
    return tuple(int(info[key], 16)
                 for key in ('domain', 'bus', 'device', 'function'))


def seen_by_nova(arqs):
    """What Nova reads of each ARQ, handle address as numbers, sorted."""
    return sorted(
        (tuple(arq[field] for field in ARQ_FIELDS)
         + (pci_address(arq['attach_handle_info']),)
         for arq in arqs), key=str)


def profiles_as_carried(profiles):
    """What the switch must keep of each device profile ({name: profile}
    as the API lists them): {name: (uuid, groups, description)}."""
    return {name: (profile['uuid'], profile['groups'],
                   profile['description'])
            for name, profile in profiles.items()}


class UpstreamCloudMixin:
    """Upstream used as a cloud uses it; Placement read as Nova sees it."""

    def _upstream(self, status, method, path, body=None, microversion=None):
        answer_status, answer = self.upstream.request(method, path, body,
                                                      microversion)
        # A deployment's logs, where the test has them.
        logs = getattr(self, '_logs', lambda: '')
        self.assertEqual(status, answer_status, '%s %s: %s\n%s' % (
            method, path, answer, logs()))
        return answer

    def _upstream_arqs(self, profile):
        return self._upstream(201, 'POST', '/v2/accelerator_requests',
                              {'device_profile_name': profile})['arqs']

    def _allocate(self, instance, rp_uuid, amount):
        """The instance's allocation, as Nova's scheduler makes it."""
        response = self.placement.adapter.put(
            '/allocations/%s' % instance,
            json={'allocations': {rp_uuid: {'resources': {'FPGA': amount}}},
                  'project_id': upstream_cyborg.PROJECT_ID,
                  'user_id': upstream_cyborg.HEADERS['X-User-Id'],
                  'consumer_generation': None,
                  'consumer_type': 'INSTANCE'})
        self.assertEqual(204, response.status_code, response.text)

    def _upstream_boot(self, profile, host, rp_uuid):
        """An instance with ``profile``'s ARQs on ``host``, bound as Nova
        binds them; (the instance, upstream's resolved answer for it)."""
        instance = str(uuid.uuid4())
        arqs = self._upstream_arqs(profile)
        self._allocate(instance, rp_uuid, len(arqs))
        self._upstream(202, 'PATCH', '/v2/accelerator_requests', {
            arq['uuid']: bind_ops(host, rp_uuid, instance) for arq in arqs})
        resolved = self._upstream(
            200, 'GET', '/v2/accelerator_requests?instance=%s'
            '&bind_state=resolved' % instance)['arqs']
        self.assertEqual(['Bound'] * len(arqs),
                         [arq['state'] for arq in resolved], resolved)
        return instance, resolved

    def _providers(self):
        """{uuid: name} of every provider in Placement."""
        response = self.placement.adapter.get('/resource_providers')
        self.assertEqual(200, response.status_code, response.text)
        return {provider['uuid']: provider['name']
                for provider in response.json()['resource_providers']}

    def _allocations(self, consumer):
        response = self.placement.adapter.get('/allocations/%s' % consumer)
        self.assertEqual(200, response.status_code, response.text)
        return {rp: allocation['resources'] for rp, allocation
                in response.json()['allocations'].items()}

    def _inventory(self, rp_uuid):
        response = self.placement.adapter.get(
            '/resource_providers/%s/inventories' % rp_uuid)
        self.assertEqual(200, response.status_code, response.text)
        inventory = response.json()['inventories']['FPGA']
        return inventory['total'], inventory['reserved']

    def _usage(self, rp_uuid):
        response = self.placement.adapter.get(
            '/resource_providers/%s/usages' % rp_uuid)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()['usages'].get('FPGA', 0)

"""The Nova tests' deployment with OpenStack Cyborg 17.0.0 first.

``UpstreamNovaDeployment`` brings up what ``NovaDeployment`` does, but with
upstream's conductor, API (behind Keystone, on the port Nova's ``[cyborg]``
names) and agent (its fake driver, on nova-compute's host) where cyborg's
processes would be (``cyborg.tests.fixtures.upstream_cyborg``); its
device's provider nests under Nova's compute node. ``switch`` then does
what an operator does: stops upstream, imports its database into cyborg's
(``cyborg-dbsync import-upstream``) and starts cyborg's processes on it,
on the same port and Placement, the agent's fake fleet at the PCI
addresses upstream's fake driver reported. Nova is not touched.
"""

from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import nova as nova_fixture
from cyborg.tests.fixtures import processes
from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.nova import deployment

# Cyborg's fake card where upstream's fake driver reported its card.
UPSTREAM_FLEET = {'fpgas': [{'vendor': '0xABCD', 'bus': '0c',
                             'first_vf': '00.1',
                             'regions': [{'vfs_per_pf':
                                          upstream_cyborg.FAKE_HANDLES}]}]}


class UpstreamNovaDeployment(deployment.NovaDeployment):
    """Nova on upstream's Cyborg until ``switch``, on cyborg's after."""

    fleet = UPSTREAM_FLEET
    region_count = 1

    def _start_cyborg(self, suffix):
        if getattr(self, 'upstream', None) is not None:
            super()._start_cyborg(suffix)
            return
        self.suffix = suffix
        upstream_bus = self.useFixture(messaging.RabbitIsolation())
        self.upstream = self.useFixture(upstream_cyborg.UpstreamCyborg(
            self.placement, [self.host], upstream_bus.transport_url,
            upstream_bus.control_exchange, keystone=self.keystone,
            nova_endpoint=self.nova.endpoint, api_port=self.api_port))
        self.services.extend(self.upstream.services)

    @staticmethod
    def _is_region(provider_name):
        # Upstream's provider is its deployable's (<host>_FakeDevice);
        # adopted, it keeps that name.
        return provider_name.endswith('_FakeDevice')

    def switch(self):
        """Upstream stopped, its database imported, cyborg started on it;
        the import's output."""
        self.upstream.stop()
        for service in self.upstream.services:
            self.services.remove(service)
        config_path = '%s/dbsync.conf' % self.state_path
        processes.write_config(config_path, {
            'database': {'connection': self.database.url}})
        output = nova_fixture.run_checked(
            [processes.console_script('cyborg-dbsync'), '--config-file',
             config_path, 'import-upstream', '--from',
             self.upstream.database_url])
        self._start_cyborg(self.suffix)
        self.regions = self.wait_until(self._nested_regions,
                                       'the adopted provider nested under '
                                       'the compute node')
        return output

    def provider_tree(self):
        """{uuid: name} of the compute node's providers, itself included."""
        response = self.placement.adapter.get(
            '/resource_providers',
            params={'in_tree': self.nova.compute_node_uuid})
        response.raise_for_status()
        return {provider['uuid']: provider['name']
                for provider in response.json()['resource_providers']}

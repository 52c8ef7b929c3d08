"""Base test case: isolated configuration and logging for every test."""

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base

from cyborg import conf
from cyborg import objects
from cyborg.common import outage


class TestCase(base.BaseTestCase):
    """Each test gets a clean ``cyborg.conf.CONF`` it may override freely."""

    def setUp(self):
        super().setUp()
        self.config = self.useFixture(config_fixture.Config(conf.CONF)).config
        conf.CONF([], project='cyborg', default_config_files=[])
        # What a service keeps on disk (the simulated cards' loaded
        # bitstreams among it) stays in this test's own directory, never
        # in the deployed default, /var/lib/cyborg, shared by every test.
        self.config(state_path=self.useFixture(fixtures.TempDir()).path)
        objects.register_all()
        # Each test starts with the database answering, whatever an earlier
        # test made of this process's outage.
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api.OUTAGE', outage.Outage('the database')))

    def flags(self, group=None, **kw):
        """Override options for this test only."""
        for key, value in kw.items():
            self.config(**{key: value, 'group': group})

"""What tests of the conductor's ARQ calls start from: the policies, a
migrated database of ``backend`` and the contexts of an administrator and
of members of two projects."""

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import policies
from cyborg.tests import base
from cyborg.tests.fixtures import database

PROJECT = 'project-a'
OTHER_PROJECT = 'project-b'


def member(project_id):
    """A member's (and reader's) context in ``project_id``."""
    return cyborg_context.RequestContext(project_id=project_id,
                                         roles=['member', 'reader'])


class ProjectsTestCase(base.TestCase):
    """``database`` (of ``backend``), ``admin``, ``member`` (of
    ``project``) and ``other`` (of OTHER_PROJECT)."""

    backend = 'sqlite'
    project = PROJECT

    def setUp(self):
        super().setUp()
        policies.init(conf.CONF)
        self.addCleanup(policies.reset)
        self.database = self.useFixture(database.Database(
            backend=self.backend, schema='migrations'))
        self.admin = cyborg_context.get_admin_context()
        self.member = member(self.project)
        self.other = member(OTHER_PROJECT)

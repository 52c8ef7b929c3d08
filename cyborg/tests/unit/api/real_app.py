"""The common setup of the API tests that count SQL statements, and of
those that post actions as an operator or a project member.

A :class:`RealAppTestCase` serves the real WSGI application (noauth, the
policy defaults) over a fresh database of ``backend`` migrated to head, and
appends to ``self.statements`` every statement sent to that database but
transaction control. A case that names ``conductor_server`` also gets a
real ``ConductorManager`` reached by local RPC dispatch in this process.
"""

import json

import sqlalchemy as sa
import webob

from cyborg import policies
from cyborg import rpc
from cyborg.api import app
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import database

# The headers of an operator (admin) and of a project's member, as
# keystonemiddleware would set them.
ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'admin-project',
         'X-User-Id': 'operator', 'X-Service-Identity-Status': 'Invalid'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'project-1',
          'X-Service-Identity-Status': 'Invalid'}

# Transaction control (the SQLite driver's BEGIN) is not a query.
TRANSACTION_CONTROL = ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE')


class RealAppTestCase(base.TestCase):
    """``self.application`` over ``self.database``; ``self.statements``."""

    backend = 'sqlite'
    # The server name of a local conductor (``self.conductor``), or None.
    conductor_server = None

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        self.database = self.useFixture(database.Database(
            backend=self.backend, schema='migrations'))
        self.conductor = None
        if self.conductor_server:
            self.conductor = conductor_manager.ConductorManager(
                host=self.conductor_server)
            rpc.register_local_endpoint(
                conductor_rpcapi.TOPIC, self.conductor_server, self.conductor)
            self.addCleanup(rpc.unregister_local_endpoint,
                            conductor_rpcapi.TOPIC, self.conductor_server)
        self.application = app.setup_app()
        self.statements = []
        sa.event.listen(self.database.engine, 'before_cursor_execute',
                        self._count)
        self.addCleanup(sa.event.remove, self.database.engine,
                        'before_cursor_execute', self._count)

    def _count(self, connection, cursor, statement, parameters, context,
               executemany):
        if statement.split(None, 1)[0].upper() not in TRANSACTION_CONTROL:
            self.statements.append(statement)

    def post(self, path, status, version='2.6', body=None, headers=ADMIN):
        """POST ``body`` (JSON, or bytes as they are) at ``version``;
        assert the answer's ``status`` and return it."""
        headers = dict(headers, **{
            'OpenStack-API-Version': 'accelerator ' + version})
        request = webob.Request.blank(path, method='POST', headers=headers)
        if body is not None:
            request.body = body if isinstance(body, bytes) else \
                json.dumps(body).encode()
            request.content_type = 'application/json'
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response

"""RPC clients and managers stay in step: versions and method names."""

import inspect
import re

from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base

PAIRS = [
    (conductor_rpcapi.ConductorAPI, conductor_manager.ConductorManager),
    (agent_rpcapi.AgentAPI, agent_manager.AgentManager),
]


def history_versions(client_class):
    """The versions listed in the client's docstring, in order."""
    return re.findall(r'^\s*(\d+\.\d+) - ', client_class.__doc__,
                      re.MULTILINE)


def exposed_methods(manager_class):
    return sorted(name for name, member in inspect.getmembers(manager_class)
                  if callable(member) and hasattr(member, 'exposed'))


def client_methods(client_class):
    return sorted(name for name, member in inspect.getmembers(client_class)
                  if inspect.isfunction(member) and not name.startswith('_'))


class TestClientsAndManagersInStep(base.TestCase):

    def test_version_cap_is_the_last_history_line(self):
        for client_class, _manager_class in PAIRS:
            versions = history_versions(client_class)
            self.assertEqual('1.0', versions[0], client_class.__name__)
            self.assertEqual(versions[-1], client_class.RPC_API_VERSION,
                             client_class.__name__)

    def test_manager_target_version_is_the_client_cap(self):
        for client_class, manager_class in PAIRS:
            self.assertEqual(client_class.RPC_API_VERSION,
                             manager_class.target.version,
                             manager_class.__name__)

    def test_every_client_method_has_an_exposed_endpoint(self):
        for client_class, manager_class in PAIRS:
            self.assertEqual(client_methods(client_class),
                             exposed_methods(manager_class),
                             client_class.__name__)

    def test_clients_never_ask_for_a_version_above_their_cap(self):
        for client_class, _manager_class in PAIRS:
            source = inspect.getsource(client_class)
            cap = tuple(int(part) for part in
                        client_class.RPC_API_VERSION.split('.'))
            for version in re.findall(r"version='(\d+\.\d+)'", source):
                self.assertLessEqual(
                    tuple(int(part) for part in version.split('.')), cap,
                    '%s asks for %s' % (client_class.__name__, version))

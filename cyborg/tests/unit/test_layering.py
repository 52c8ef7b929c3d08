"""The structure doc/source/contributor/architecture.rst describes, checked.

Each test reads the source tree (not imports at run time) and names the
file and line that breaks a rule, so a change that blurs a layer fails
here instead of in a reviewer's head.
"""

import ast
import pathlib

from cyborg.objects import fields
from cyborg.tests import base

PACKAGE = pathlib.Path(__file__).resolve().parents[2]
TESTS = PACKAGE / 'tests'
MIGRATIONS = PACKAGE / 'db' / 'migrations'
MAX_LINES = 600

# Where cyborg.conf.CONF may be read: the entry points, the configuration
# itself, the process setup, the all-in-one, the RPC managers, the API's
# app and hooks, and the drivers (their own option groups).
CONF_READERS = (
    'cmd/', 'conf/', 'aio/', 'wsgi/', 'agent/drivers/',
    'service.py', 'conductor/manager.py', 'agent/manager.py',
    'api/app.py', 'api/hooks.py',
)


def _sources(include_tests=False):
    for path in sorted(PACKAGE.rglob('*.py')):
        if not include_tests and TESTS in path.parents:
            continue
        yield path


def _relative(path):
    return path.relative_to(PACKAGE).as_posix()


def _tree(path):
    return ast.parse(path.read_text(encoding='utf-8'), filename=str(path))


def _imported_modules(tree):
    """(line, module) of every ``import x`` and ``from x import y`` (y too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, '%s.%s' % (node.module, alias.name)


class LayeringTest(base.TestCase):

    def test_no_source_file_over_the_limit(self):
        long_files = []
        for path in _sources(include_tests=True):
            with path.open(encoding='utf-8') as source:
                count = sum(1 for _ in source)
            if count > MAX_LINES:
                long_files.append('%s (%d lines)' % (_relative(path), count))
        self.assertEqual([], long_files)

    def test_arq_states_are_spelled_only_in_fields(self):
        states = set(fields.ARQState.ALL)
        found = []
        for path in _sources():
            if path.name == 'fields.py' or MIGRATIONS in path.parents:
                continue
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.Constant) and node.value in states:
                    found.append('%s:%d %r' % (_relative(path), node.lineno,
                                               node.value))
        self.assertEqual([], found)

    def test_conf_imports_nothing_above_it(self):
        found = []
        for path in sorted((PACKAGE / 'conf').rglob('*.py')):
            for line, module in _imported_modules(_tree(path)):
                if module.startswith('cyborg.') and \
                        not module.startswith('cyborg.conf'):
                    found.append('%s:%d %s' % (_relative(path), line, module))
        self.assertEqual([], found)

    def test_api_reaches_the_conductor_only_through_its_rpcapi(self):
        found = []
        for path in sorted((PACKAGE / 'api').rglob('*.py')):
            for line, module in _imported_modules(_tree(path)):
                below_objects = module.startswith('cyborg.db')
                past_rpcapi = (module.startswith('cyborg.conductor')
                               and module not in ('cyborg.conductor',
                                                  'cyborg.conductor.rpcapi'))
                if below_objects or past_rpcapi:
                    found.append('%s:%d %s' % (_relative(path), line, module))
        self.assertEqual([], found)

    def test_conf_is_read_only_where_settings_are_handed_out(self):
        found = []
        for path in _sources():
            relative = _relative(path)
            if relative.startswith(CONF_READERS):
                continue
            for node in ast.walk(_tree(path)):
                name = (node.attr if isinstance(node, ast.Attribute)
                        else node.id if isinstance(node, ast.Name) else None)
                if name == 'CONF':
                    found.append('%s:%d' % (relative, node.lineno))
        self.assertEqual([], found)

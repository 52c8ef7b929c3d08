"""The structure doc/source/contributor/architecture.rst describes, checked.

Each test reads the source tree (not imports at run time) and names the
file and line that breaks a rule, so a change that blurs a layer fails
here instead of in a reviewer's head.
"""

import ast
import pathlib

from cyborg.common import vocabulary
from cyborg.tests import base

PACKAGE = pathlib.Path(__file__).resolve().parents[2]
ROOT = PACKAGE.parent
TESTS = PACKAGE / 'tests'
BENCHMARKS = ROOT / 'benchmarks'
MIGRATIONS = PACKAGE / 'db' / 'migrations'
VOCABULARY = PACKAGE / 'common' / 'vocabulary.py'
MAX_LINES = 600
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 50

# Where cyborg.conf.CONF may be read: the entry points, the configuration
# itself, the process setup, the all-in-one, the RPC managers, the API's
# app and hooks, and the drivers (their own option groups).
CONF_READERS = (
    'cmd/', 'conf/', 'aio/', 'wsgi/', 'agent/drivers/',
    'service.py', 'conductor/manager.py', 'agent/manager.py',
    'api/app.py', 'api/hooks.py',
)

# The layers, from the top: a module imports only from its own layer and
# the layers below it. Each name is a package or module right under
# cyborg/ (os_acc is the compute nodes' library beside it); '' is the
# cyborg package itself.
LAYERS = (
    ('cmd', 'wsgi'),
    ('aio', 'os_acc'),
    ('api', 'upstream'),
    ('conductor', 'agent'),
    ('service',),
    ('clients',),
    ('bitstream', 'bitstream_fit', 'bitstream_topology'),
    ('rpc',),
    ('context',),
    ('policies',),
    ('objects',),
    ('db',),
    ('conf', 'metrics'),
    ('exception', 'common', ''),
)
# Peers of one layer that reach each other only through the other's
# published RPC interface.
RPC_PEERS = ('conductor', 'agent')


def _sources(include_tests=False):
    for path in sorted(PACKAGE.rglob('*.py')):
        if not include_tests and TESTS in path.parents:
            continue
        yield path


def _tree_sources(*tops, tests=False):
    """The Python files under ROOT/``tops``, tests only or none of them."""
    for top in tops:
        for path in sorted((ROOT / top).rglob('*.py')):
            if (TESTS in path.parents) == tests:
                yield path


def _relative(path):
    return path.relative_to(PACKAGE).as_posix()


def _from_root(path):
    return path.relative_to(ROOT).as_posix()


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


def _module_name(path):
    """``cyborg/api/app.py`` as ``cyborg.api.app``, a package as itself; a
    benchmark script as the scripts import it (their directory is on the
    path): ``benchmarks/bench/api.py`` as ``bench.api``."""
    root = BENCHMARKS if BENCHMARKS in path.parents else ROOT
    parts = list(path.relative_to(root).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def _is_module(name):
    for root in (ROOT, BENCHMARKS):
        path = root.joinpath(*name.split('.'))
        if path.with_suffix('.py').is_file() or \
                (path / '__init__.py').is_file():
            return True
    return False


def _targets(node, package):
    """The modules an import statement loads: ``from a import b`` names
    module ``a.b`` when there is one, else ``a``; relative imports are
    resolved against ``package``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    module = node.module or ''
    if node.level:
        parts = package.split('.')
        parts = parts[:len(parts) - node.level + 1] + [module]
        module = '.'.join(part for part in parts if part)
    named = ['%s.%s' % (module, alias.name) for alias in node.names]
    return [name if _is_module(name) else module for name in named]


def _imports(path, module_level=False):
    """(line, module) of each import in ``path``; with ``module_level``
    only those run when the module is imported (not in a function)."""
    name = _module_name(path)
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    found = []
    pending = [_tree(path)]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.extend((node.lineno, target)
                         for target in _targets(node, package))
        if not (module_level and isinstance(node, functions)):
            pending.extend(ast.iter_child_nodes(node))
    return sorted(found)


def _layer_of(module):
    """(rank, name) of ``module``'s layer (rank 0 at the top), or None."""
    parts = module.split('.')
    if parts[0] == 'os_acc':
        name = 'os_acc'
    elif parts[0] == 'cyborg':
        name = parts[1] if len(parts) > 1 else ''
    else:
        return None
    for rank, layer in enumerate(LAYERS):
        if name in layer:
            return rank, name
    return None


def _circles(graph):
    """The groups of modules of ``graph`` ({module: {imported: line}}) that
    import each other in a circle (Tarjan's strongly connected components
    of more than one module)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _too_long(path, classes_only=False):
    """'file:line name (n lines)' of each class over MAX_CLASS_LINES and,
    unless ``classes_only``, each function over MAX_FUNCTION_LINES."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ClassDef):
            limit = MAX_CLASS_LINES
        elif not classes_only and isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            limit = MAX_FUNCTION_LINES
        else:
            continue
        lines = node.end_lineno - node.lineno + 1
        if lines > limit:
            yield '%s:%d %s (%d lines)' % (_from_root(path), node.lineno,
                                           node.name, lines)


class LayeringTest(base.TestCase):
    """Who may import whom (architecture.rst, "Layers")."""

    def test_every_module_belongs_to_a_layer(self):
        found = [_from_root(path)
                 for path in _tree_sources('cyborg', 'os_acc')
                 if _layer_of(_module_name(path)) is None]
        self.assertEqual([], found)

    def test_no_import_runs_up_a_layer(self):
        found = []
        for path in _tree_sources('cyborg', 'os_acc'):
            own = _layer_of(_module_name(path))
            for line, module in _imports(path) if own else ():
                theirs = _layer_of(module)
                if theirs is None or theirs[0] >= own[0]:
                    continue
                found.append('%s:%d %s (%s is above %s)' % (
                    _from_root(path), line, module, theirs[1] or 'cyborg',
                    own[1] or 'cyborg'))
        self.assertEqual([], found)

    def test_conductor_and_agent_meet_only_through_their_rpcapi(self):
        found = []
        for path in _tree_sources('cyborg'):
            own = _layer_of(_module_name(path))
            if own is None or own[1] not in RPC_PEERS:
                continue
            for line, module in _imports(path):
                theirs = _layer_of(module)
                if theirs is None or theirs[1] not in RPC_PEERS or \
                        theirs[1] == own[1] or \
                        module == 'cyborg.%s.rpcapi' % theirs[1]:
                    continue
                found.append('%s:%d %s' % (_from_root(path), line, module))
        self.assertEqual([], found)

    def test_conf_imports_nothing_above_it(self):
        found = []
        for path in sorted((PACKAGE / 'conf').rglob('*.py')):
            for line, module in _imported_modules(_tree(path)):
                if module.startswith('cyborg.') and \
                        not module.startswith('cyborg.conf'):
                    found.append('%s:%d %s' % (_relative(path), line, module))
        self.assertEqual([], found)

    def test_bottom_imports_nothing_of_cyborg(self):
        found = []
        for path in sorted((PACKAGE / 'common').rglob('*.py')):
            for line, module in _imports(path):
                if module.split('.')[0] in ('cyborg', 'os_acc'):
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

    def test_no_circle_of_module_level_imports(self):
        paths = list(_tree_sources('cyborg', 'os_acc', 'benchmarks'))
        modules = {_module_name(path): path for path in paths}
        graph = {}
        for name, path in modules.items():
            graph[name] = edges = {}
            for line, target in _imports(path, module_level=True):
                if target in modules and target != name:
                    edges.setdefault(target, line)
        found = ['; '.join('%s:%d imports %s' % (
            _from_root(modules[module]), graph[module][target], target)
            for module in circle for target in sorted(graph[module])
            if target in circle)
            for circle in _circles(graph)]
        self.assertEqual([], found)


class OwnershipTest(base.TestCase):
    """Who owns what (architecture.rst, "Who owns what")."""

    def test_arq_states_are_spelled_only_in_the_vocabulary(self):
        states = set(vocabulary.ARQState.ALL)
        found = []
        for path in _sources():
            if path == VOCABULARY or MIGRATIONS in path.parents:
                continue
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.Constant) and node.value in states:
                    found.append('%s:%d %r' % (_relative(path), node.lineno,
                                               node.value))
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


class SizeTest(base.TestCase):
    """Files, classes and functions split by job before they grow long."""

    def test_no_source_file_over_the_limit(self):
        long_files = []
        for path in _sources(include_tests=True):
            with path.open(encoding='utf-8') as source:
                count = sum(1 for _ in source)
            if count > MAX_LINES:
                long_files.append('%s (%d lines)' % (_relative(path), count))
        self.assertEqual([], long_files)

    def test_no_class_or_function_over_the_limit(self):
        found = []
        for path in _tree_sources('cyborg', 'os_acc', 'benchmarks', 'tools'):
            if MIGRATIONS not in path.parents:
                found.extend(_too_long(path))
        self.assertEqual([], found)

    def test_no_test_class_over_the_limit(self):
        found = []
        for path in _tree_sources('cyborg', tests=True):
            found.extend(_too_long(path, classes_only=True))
        self.assertEqual([], found)

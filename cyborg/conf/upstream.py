"""Reading a cyborg.conf written for OpenStack Cyborg.

An operator who switches from OpenStack Cyborg keeps its configuration
files. Three kinds of upstream options meet this project's services:

* the same name and meaning (most of them, and every library's): read as
  they are;
* renamed or moved: each of our options that took one over names it as a
  ``deprecated_name``/``deprecated_group``, so that oslo.config reads the
  upstream value under our name and logs one deprecation warning naming
  both (``RENAMED`` lists them, for the operator guide and its test);
* unknown to this project: nothing reads them. ``warn_unknown_options``
  logs them once, in one warning, when a service starts; they are never
  an error.

Two upstream options are registered here although nothing reads them
directly: ``pybasedir`` and ``bindir``, which upstream's sample sets
``state_path`` from (``state_path = $pybasedir``), so that the
substitution of a carried-over file resolves.

The options a service knows are those of the namespaces of the sample
configuration (``NAMESPACES``, the same as
etc/cyborg/cyborg-config-generator.conf), with their deprecated names, the
options of the keystoneauth plugin a group's ``auth_type`` names, and
whatever else the process registered by the time it asks.
"""

import logging
import os

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from stevedore import named

LOG = logging.getLogger(__name__)

# The namespaces of the sample configuration: every option this project or
# a library it configures reads.
NAMESPACES = ('cyborg', 'oslo.db', 'oslo.log', 'oslo.messaging',
              'oslo.policy', 'oslo.middleware.cors',
              'oslo.middleware.http_proxy_to_wsgi',
              'oslo.middleware.healthcheck',
              'keystonemiddleware.auth_token', 'oslo.limit',
              'oslo.service.service')

# Upstream's name -> ours, as (group, option) pairs: what an operator's
# file may still say, and where the value now goes. Each pair is a
# deprecated name of our option (the test checks both agree).
RENAMED = {
    ('DEFAULT', 'bind_timeout'): ('conductor', 'bind_timeout'),
    ('DEFAULT', 'thread_pool_size'): ('conductor', 'bind_workers'),
    ('DEFAULT', 'periodic_interval'): ('agent', 'report_interval'),
    ('gpu_devices', 'enabled_vgpu_types'): ('nvidia_gpu_driver',
                                            'enabled_vgpu_types'),
    ('glance', 'api_insecure'): ('glance', 'insecure'),
    ('ssl', 'ca_file'): ('glance', 'cafile'),
    ('ssl', 'cert_file'): ('glance', 'certfile'),
    ('ssl', 'key_file'): ('glance', 'keyfile'),
}

# Upstream's deprecated names of the Glance TLS options, in the form
# keystoneauth's register_session_conf_options takes them.
GLANCE_DEPRECATED_OPTS = {
    'insecure': [cfg.DeprecatedOpt('api_insecure', group='glance')],
    'cafile': [cfg.DeprecatedOpt('ca_file', group='ssl')],
    'certfile': [cfg.DeprecatedOpt('cert_file', group='ssl')],
    'keyfile': [cfg.DeprecatedOpt('key_file', group='ssl')],
}

_PACKAGE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                            os.pardir))

path_opts = [
    cfg.StrOpt(
        'pybasedir', default=_PACKAGE_DIR,
        sample_default='/usr/lib/python/site-packages/cyborg',
        help='Read only so that "$pybasedir" in a configuration written '
             'for OpenStack Cyborg (whose state_path defaults to it) '
             'resolves; nothing else uses it. Set state_path instead.'),
    cfg.StrOpt(
        'bindir', default='$pybasedir/bin',
        help='Read only so that "$bindir" in a configuration written for '
             'OpenStack Cyborg resolves; nothing else uses it.'),
]


def register_opts(conf):
    conf.register_opts(path_opts)


def list_opts():
    return {'DEFAULT': path_opts}


def _names(opt):
    """Every spelling a file may give ``opt``: name, dest, with _ for -."""
    names = {opt.name, opt.dest}
    return names | {name.replace('-', '_') for name in names}


def _deprecated(opt, group):
    """(group, name) pairs of the deprecated names of ``opt`` of ``group``."""
    pairs = set()
    for old in opt.deprecated_opts:
        old_group = old.group or group
        old_name = old.name or opt.dest
        for name in (old_name, old_name.replace('-', '_')):
            pairs.add((old_group, name))
    return pairs


def _add(known, group, opts):
    group = getattr(group, 'name', group) or 'DEFAULT'
    for opt in opts:
        for name in _names(opt):
            known.add((group, name))
        known.update(_deprecated(opt, group))


def _catalog():
    """(group, name) of every option of ``NAMESPACES``, deprecated ones
    included."""
    known = set()
    manager = named.NamedExtensionManager(
        'oslo.config.opts', names=NAMESPACES, invoke_on_load=True,
        on_load_failure_callback=_skip_namespace)
    for extension in manager:
        for group, opts in extension.obj:
            _add(known, group, opts)
    return known


def _skip_namespace(manager, entry_point, error):
    LOG.debug('Options of %s not listed: %s', entry_point, error)


def _registered(conf):
    """(group, name) of every option registered on ``conf`` now."""
    known = set()
    for name in conf:
        try:
            value = conf[name]
        except Exception:  # an option of [DEFAULT] with a bad value
            value = None
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            known.update((name, option) for option in value)
        else:
            known.add(('DEFAULT', name))
    return known


def _plugin_options(group, values):
    """(group, name) of the options of the keystoneauth plugin that
    ``auth_type`` of ``group`` names in a file, if any."""
    plugin = (values.get('auth_type') or values.get('auth_plugin')
              or [None])[-1]
    if not plugin:
        return set()
    try:
        opts = ks_loading.get_auth_plugin_conf_options(plugin)
    except ks_exceptions.NoMatchingPlugin:
        return set()
    known = set()
    _add(known, group, opts)
    return known


def config_files(conf):
    """The files ``conf`` was read from, in order: --config-file, then the
    *.conf files of each --config-dir."""
    paths = list(conf.config_file or [])
    directories = conf.config_dir or []
    if isinstance(directories, str):
        directories = [directories]
    for directory in directories:
        try:
            entries = sorted(os.listdir(directory))
        except OSError:
            continue
        paths.extend(os.path.join(directory, entry) for entry in entries
                     if entry.endswith('.conf'))
    return paths


def _file_options(paths):
    """{group: {name: [values]}} of every option set in the files."""
    sections = {}
    for path in paths:
        parsed = {}
        try:
            cfg.ConfigParser(path, parsed).parse()
        except (OSError, cfg.ParseError):
            continue  # oslo.config reported it already, or never read it
        for section, values in parsed.items():
            sections.setdefault(section, {}).update(values)
    return sections


def unknown_options(conf):
    """Sorted "[group] name" of every option set in ``conf``'s files that
    this service does not read."""
    sections = _file_options(config_files(conf))
    if not sections:
        return []
    known = _catalog() | _registered(conf)
    unknown = []
    for section, values in sections.items():
        group = 'DEFAULT' if section.upper() == 'DEFAULT' else section
        known_here = known | _plugin_options(group, values)
        for name in values:
            if (group, name) not in known_here:
                unknown.append('[%s] %s' % (group, name))
    return sorted(unknown)


def warn_unknown_options(conf):
    """Log, in one warning, the options of ``conf``'s files nobody reads.

    Called once by each service after its configuration is parsed; a
    configuration carried over from OpenStack Cyborg sets some.
    """
    try:
        unknown = unknown_options(conf)
    except Exception:  # never stop a service for a warning
        LOG.debug('Could not list the unknown options', exc_info=True)
        return []
    if unknown:
        LOG.warning(
            'Ignoring %d option(s) of the configuration that this service '
            'does not know (options of OpenStack Cyborg without an '
            'equivalent here, or misspelt): %s. The operator guide '
            '(admin/switching-from-cyborg) says what replaces them.',
            len(unknown), ', '.join(unknown))
    return unknown

"""oslo.policy rules of the API and the one enforcer of the process.

Each resource's rules live in a module named after it; ``base`` holds the
shared role checks. ``cyborg.context.RequestContext.can`` is how code checks
a rule; it ends in ``authorize`` here.
"""

import argparse
import itertools
import sys
import threading

from oslo_policy import policy

from cyborg import conf
from cyborg import exception
from cyborg.policies import arq
from cyborg.policies import attribute
from cyborg.policies import base
from cyborg.policies import deployable
from cyborg.policies import device
from cyborg.policies import device_profile

_RULE_MODULES = (base, device_profile, arq, device, deployable, attribute)

_ENFORCER = None
_ENFORCER_LOCK = threading.Lock()


def list_rules():
    """Every rule with its default, for the enforcer and the sample file."""
    return list(itertools.chain.from_iterable(
        module.list_rules() for module in _RULE_MODULES))


def init(config=None):
    """The process's enforcer, created from ``config`` (cyborg.conf.CONF) once."""
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is None:
            enforcer = policy.Enforcer(conf.CONF if config is None else config)
            enforcer.register_defaults(list_rules())
            _ENFORCER = enforcer
        return _ENFORCER


def reset():
    """Forget the enforcer, so the next check reads the configuration again."""
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is not None:
            _ENFORCER.clear()
        _ENFORCER = None


def get_enforcer(argv=None):
    """The enforcer with cyborg's configuration, for the oslopolicy tools.

    The tools parse their own command line; the --config-file and
    --config-dir values in it (else cyborg's default files) configure cyborg.
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument('--config-file', action='append', default=[])
    parser.add_argument('--config-dir', action='append', default=[])
    known, _others = parser.parse_known_args(
        sys.argv[1:] if argv is None else argv)
    config_args = []
    for path in known.config_file:
        config_args += ['--config-file', path]
    for path in known.config_dir:
        config_args += ['--config-dir', path]
    conf.CONF(config_args, project='cyborg')
    reset()
    return init()


def authorize(context, rule, target, fatal=True):
    """Check ``rule`` for the caller ``context`` on ``target``.

    Returns True or False when ``fatal`` is False.

    :raises: exception.PolicyNotAuthorized (403) when refused and ``fatal``;
        this includes a token of a scope the rule does not accept.
    :raises: oslo_policy.policy.PolicyNotRegistered for an unknown rule.
    """
    enforcer = init()
    try:
        return enforcer.authorize(rule, target, context, do_raise=fatal,
                                  exc=exception.PolicyNotAuthorized,
                                  action=rule)
    except policy.InvalidScope:
        raise exception.PolicyNotAuthorized(action=rule)


def check_is_admin(context):
    """Whether ``context`` passes the ``context_is_admin`` rule."""
    target = {'project_id': context.project_id, 'user_id': context.user_id}
    return init().enforce(base.CONTEXT_IS_ADMIN, target, context)

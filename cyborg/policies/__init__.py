"""oslo.policy rules of the API and the one enforcer of the process.

Each resource's rules live in a module named after it; ``base`` holds the
shared role checks. ``cyborg.context.RequestContext.can`` is how code checks
a rule; it ends in ``authorize`` here.

The process hands in its configuration once with ``init(conf)``: the API's
application (``cyborg.api.app.setup_app``) and cyborg-conductor do. A check
before that is a programming error and raises ``EnforcerNotInitialized``.
"""

import argparse
import itertools
import sys
import threading
import time

from oslo_config import cfg
from oslo_policy import policy

from cyborg import exception
from cyborg.policies import arq
from cyborg.policies import attribute
from cyborg.policies import base
from cyborg.policies import bitstream
from cyborg.policies import deployable
from cyborg.policies import device
from cyborg.policies import device_profile
from cyborg.policies import fleet

_RULE_MODULES = (base, device_profile, arq, device, deployable, attribute,
                 fleet, bitstream)

# The configuration handed to init(), and the enforcer built from it.
_CONFIG = None
_ENFORCER = None
_ENFORCER_LOCK = threading.Lock()


class EnforcerNotInitialized(RuntimeError):
    """A rule was checked before the process handed in its configuration."""

    def __init__(self):
        super().__init__('cyborg.policies.init(conf) was not called: there is '
                         'no configuration to read the policy rules with')


def list_rules():
    """Every rule with its default, for the enforcer and the sample file."""
    return list(itertools.chain.from_iterable(
        module.list_rules() for module in _RULE_MODULES))


# Seconds between two looks at the policy files' change times.
RELOAD_INTERVAL = 1.0


class _Enforcer(policy.Enforcer):
    """oslo.policy's enforcer, looking for changed policy files at most
    once every RELOAD_INTERVAL seconds rather than on every check.

    oslo.policy finds each policy file and directory again and reads their
    change times on every check (two a request); that, and walking every
    default again, was a tenth of the cost of a small answer. An edited
    policy file still takes effect without a restart, within a second.
    """

    _checked_at = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.decisions = {}

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if (force_reload or self._checked_at is None
                or now - self._checked_at >= RELOAD_INTERVAL):
            super().load_rules(force_reload)
            self._checked_at = now
            # The rules may have changed (and oslo.policy adds defaults to
            # them in place): decisions are remembered until the next look.
            self.decisions = {}

    def set_rules(self, rules, overwrite=True, use_conf=False):
        super().set_rules(rules, overwrite=overwrite, use_conf=use_conf)
        self.decisions = {}

    def register_default(self, default):
        super().register_default(default)
        self._checked_at = None  # the next check adds it to the rules

    def clear(self):
        super().clear()
        self._checked_at = None
        self.decisions = {}


def _new_enforcer(config):
    """An enforcer of ``config`` that knows every rule's default."""
    enforcer = _Enforcer(config)
    enforcer.register_defaults(list_rules())
    return enforcer


def init(config):
    """Check rules with ``config`` ([oslo_policy]) from now on.

    Returns the new enforcer, which replaces any earlier one.
    """
    global _CONFIG, _ENFORCER
    with _ENFORCER_LOCK:
        _CONFIG = config
        _ENFORCER = _new_enforcer(config)
        return _ENFORCER


def reset():
    """Forget the enforcer, so the next check reads the configuration again.

    The configuration handed to ``init`` stays.
    """
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is not None:
            _ENFORCER.clear()
        _ENFORCER = None


def _enforcer():
    """The enforcer, built again from the configuration after a ``reset``.

    :raises: EnforcerNotInitialized before ``init``.
    """
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is None:
            if _CONFIG is None:
                raise EnforcerNotInitialized()
            _ENFORCER = _new_enforcer(_CONFIG)
        return _ENFORCER


def get_enforcer(argv=None):
    """An enforcer configured from the command line, for the oslopolicy tools.

    The tools parse their own command line; the --config-file and
    --config-dir values in it (else cyborg's default files) configure the
    enforcer, on a configuration of its own.
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
    config = cfg.ConfigOpts()
    config(config_args, project='cyborg')
    return _new_enforcer(config)


def authorize(context, rule, target, fatal=True):
    """Check ``rule`` for the caller ``context`` on ``target``.

    Returns True or False when ``fatal`` is False. The decision is
    remembered until the next look at the policy files (``_Enforcer``),
    for the same rule, target and credentials (``_decision_key``).

    :raises: exception.PolicyNotAuthorized (403) when refused and ``fatal``;
        this includes a token of a scope the rule does not accept.
    :raises: oslo_policy.policy.PolicyNotRegistered for an unknown rule.
    """
    enforcer = _enforcer()
    enforcer.load_rules()
    key = _decision_key(rule, target, context)
    decision = enforcer.decisions.get(key) if key is not None else None
    if decision is None:
        try:
            decision = enforcer.authorize(rule, target, context,
                                          do_raise=False)
        except policy.InvalidScope:
            if fatal:
                raise exception.PolicyNotAuthorized(action=rule)
            return False
        if key is not None:
            if len(enforcer.decisions) >= MAX_DECISIONS:
                enforcer.decisions = {}
            enforcer.decisions[key] = decision
    if not decision and fatal:
        raise exception.PolicyNotAuthorized(action=rule)
    return decision


# Decisions remembered between two looks at the policy files, at most.
MAX_DECISIONS = 4096


def _decision_key(rule, target, context):
    """What a decision on ``rule`` depends on: the rule, the target and the
    caller's credentials (oslo.policy's checks read nothing else), or None
    when a value cannot be a key (the decision is then not remembered).

    Checking a rule walks its parsed checks and, for each, asks the
    inspect module for the arguments of its ``__call__``: 80 µs of a
    small answer's 2 ms, for a decision that is the same for every
    request of one caller.
    """
    try:
        return (rule, _frozen(target), _frozen(context.to_policy_values()))
    except TypeError:  # a value that is not hashable
        return None


def _frozen(values):
    items = []
    for name, value in values.items():
        if isinstance(value, list):
            value = tuple(value)
        items.append((name, value))
    items.sort()
    key = tuple(items)
    hash(key)
    return key


def check_is_admin(context):
    """Whether ``context`` passes the ``context_is_admin`` rule."""
    target = {'project_id': context.project_id, 'user_id': context.user_id}
    return _enforcer().enforce(base.CONTEXT_IS_ADMIN, target, context)

"""Pecan's argument specs, computed once per controller function.

Pecan asks ``pecan.util.getargspec`` for a controller's arguments several
times on every request (finding the controller, routing a RestController,
invoking it), and each answer builds a new namedtuple class and walks
``inspect.getfullargspec``: about a fifth of the CPU of a small GET. A
function's arguments never change, so ``install`` puts a cached
``getargspec`` in the pecan modules that call it. The cache is keyed by
the function under a bound method (the spec of a bound method is its
function's: ``self`` included), so it holds one entry per controller
function whatever the controller instances.
"""

import threading

from pecan import core
from pecan import decorators
from pecan import rest
from pecan import routing
from pecan import util

_CALLERS = (core, decorators, rest, routing)
_LOCK = threading.Lock()
_installed = False


def cached(getargspec):
    """``getargspec`` answering from a cache per function."""
    specs = {}

    def cached_getargspec(method):
        function = getattr(method, '__func__', method)
        try:
            return specs[function]
        except (KeyError, TypeError):
            pass
        spec = getargspec(method)
        try:
            specs[function] = spec
        except TypeError:  # an unhashable callable: not cached
            pass
        return spec

    cached_getargspec.specs = specs
    return cached_getargspec


def install():
    """Make pecan's modules use one cached ``getargspec`` (idempotent)."""
    global _installed
    with _LOCK:
        if _installed:
            return
        replacement = cached(util.getargspec)
        for module in _CALLERS:
            module.getargspec = replacement
        _installed = True

"""Pecan's argument specs come from one cache per controller function."""

from pecan import core
from pecan import decorators
from pecan import rest
from pecan import routing
from pecan import util

from cyborg.api import argspecs
from cyborg.tests import base


class Controller:

    def get_one(self, uuid, verbose=False):
        return uuid, verbose


class TestCachedArgspecs(base.TestCase):

    def test_the_same_spec_as_pecan_once_per_function(self):
        calls = []

        def counting(method):
            calls.append(method)
            return util.getargspec(method)

        cached = argspecs.cached(counting)
        first, second = Controller(), Controller()
        spec = cached(first.get_one)
        self.assertEqual(util.getargspec(first.get_one), spec)
        self.assertEqual(['self', 'uuid', 'verbose'], spec.args)
        # Another bound method of the same function, and the function.
        self.assertIs(spec, cached(second.get_one))
        self.assertIs(spec, cached(Controller.get_one))
        self.assertEqual(1, len(calls))
        self.assertEqual([Controller.get_one], list(cached.specs))

    def test_an_unhashable_callable_is_answered_uncached(self):
        class Unhashable:
            __hash__ = None

            def __call__(self, value):
                return value

        cached = argspecs.cached(util.getargspec)
        callable_object = Unhashable()
        self.assertEqual(['self', 'value'], cached(callable_object).args)
        self.assertEqual({}, cached.specs)

    def test_installed_in_every_pecan_module_that_asks(self):
        argspecs.install()
        argspecs.install()
        replacement = core.getargspec
        self.assertIsNot(util.getargspec, replacement)
        for module in (decorators, rest, routing):
            self.assertIs(replacement, module.getargspec)
        self.assertEqual(util.getargspec(Controller.get_one),
                         replacement(Controller().get_one))

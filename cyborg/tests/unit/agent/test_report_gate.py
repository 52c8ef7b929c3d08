"""A host's inventory reports and programmings never overlap.

A report collected before a programming ended and applied after the
conductor recorded it would put the region's old image back in the
database; the gate keeps the two apart, in both orders, while
programmings of different regions still run together.
"""

import threading

import fixtures

from cyborg import conf
from cyborg.agent import manager
from cyborg.agent import programming
from cyborg.tests import base
from cyborg.tests.fixtures import messaging

WAIT = 10


def _start(target):
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


class BlockingConductor:
    """Stands in for the agent's ConductorAPI: a report stays in flight
    until ``release`` is set."""

    def __init__(self):
        self.in_flight = threading.Event()
        self.release = threading.Event()

    def report_inventory(self, context, host, devices, timeout=None):
        self.in_flight.set()
        assert self.release.wait(WAIT)


class ReportGateTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.gate = programming.ReportGate()
        self.events = []

    def _program(self, entered, leave):
        def run():
            with self.gate.programming():
                self.events.append('program')
                entered.set()
                assert leave.wait(WAIT)
            self.events.append('program done')
        return _start(run)

    def _report(self):
        def run():
            with self.gate.reporting():
                self.events.append('report')
        return _start(run)

    def test_a_report_waits_for_the_programmings_under_way(self):
        entered, leave = threading.Event(), threading.Event()
        programs = [self._program(entered, leave)]
        self.assertTrue(entered.wait(WAIT))
        report = self._report()
        report.join(0.2)
        self.assertTrue(report.is_alive())

        leave.set()
        for thread in programs + [report]:
            thread.join(WAIT)
        self.assertEqual(['program', 'program done', 'report'], self.events)

    def test_programmings_of_two_regions_run_together(self):
        leave = threading.Event()
        first, second = threading.Event(), threading.Event()
        threads = [self._program(first, leave), self._program(second, leave)]

        self.assertTrue(first.wait(WAIT))
        self.assertTrue(second.wait(WAIT))
        leave.set()
        for thread in threads:
            thread.join(WAIT)
        self.assertEqual(['program', 'program', 'program done',
                          'program done'], self.events)

    def test_a_programming_waits_for_a_waiting_report(self):
        # A report waiting behind one programming goes before a second
        # programming that arrives after it.
        first_in, first_out = threading.Event(), threading.Event()
        first = self._program(first_in, first_out)
        self.assertTrue(first_in.wait(WAIT))
        report = self._report()
        for _ in range(200):
            if self.gate._reports_waiting:
                break
            report.join(0.01)
        second_in = threading.Event()
        second = self._program(second_in, threading.Event())
        self.assertFalse(second_in.wait(0.2))

        first_out.set()
        first.join(WAIT)
        report.join(WAIT)
        self.assertTrue(second_in.wait(WAIT))
        self.assertEqual(['program', 'program done', 'report', 'program'],
                         self.events)
        self.assertTrue(second.is_alive())


class AgentReportGateTest(base.TestCase):

    def test_a_program_waits_until_the_report_in_flight_is_applied(self):
        self.useFixture(messaging.Messaging(conf.CONF))
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        conductor = agent.conductor = BlockingConductor()
        programmed = threading.Event()
        self.addCleanup(conductor.release.set)

        def program(*args):
            programmed.set()
            return programming.answer(0, 'programmed')

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.agent.programming.program', program))
        report = _start(lambda: agent.report_inventory(None))
        self.assertTrue(conductor.in_flight.wait(WAIT))
        call = _start(lambda: agent.program(None, 'fake_driver', 'region0',
                                            'image'))
        self.assertFalse(programmed.wait(0.2))

        conductor.release.set()
        self.assertTrue(programmed.wait(WAIT))
        report.join(WAIT)
        call.join(WAIT)

"""A restart of cyborg-aio keeps what its simulated FPGA holds.

The all-in-one runs as a process; README.rst's commands program region1
(the bitstream's function and the fleet file's topology of 2 PFs with 2
VFs each: 17 deployables become 20). Stopped with SIGINT and started again
on the same state directory, the agent's first report finds the card as
it was: the same 20 deployables, region1's ``bitstream_id`` and its
function trait in Placement. Removing the fake driver's state file while
it is stopped is a power cycle: started again, region1 is blank, with no
``bitstream_id``, no function trait and its original tree (17).
"""

import os
import signal
import sqlite3
import subprocess

import requests
from testtools import content

from cyborg.agent.drivers import fake_state
from cyborg.tests.functional.aio import test_aio
from cyborg.tests.functional.aio import test_program_aio

REGION = test_aio.INTEL + '-region1'
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_3F6A1C2E5B7D4E8F9A0B1C2D3E4F5A6B'
BLANK = len(test_aio.FLEET_TREE)
# region1's PF and 2 VFs replaced by 2 PFs of 2 VFs each.
PROGRAMMED = BLANK - 3 + 6


class TestRestartAllInOne(test_aio.AllInOneProcess):

    def setUp(self):
        super().setUp()
        with open(self.config_path, 'a') as config_file:
            config_file.write('[agent]\nreport_interval = 1\n')
        self.environment = {name: value for name, value in os.environ.items()
                            if not name.startswith('OS_')}
        self.environment['OS_IMAGE_URL'] = \
            'http://127.0.0.1:%d' % self.glance_port
        self.api_url = 'http://127.0.0.1:%d' % self.api_port

    # -- Reading the API, the database and Placement ------------------------

    def _deployables(self):
        try:
            response = requests.get(self.api_url + '/v2/deployables',
                                    timeout=5)
        except requests.ConnectionError:
            return None
        if response.status_code != 200:
            return None
        return {item['name']: item for item in response.json()['deployables']}

    def _function_traits(self, region):
        response = self._placement(
            '/resource_providers/%s/traits' % region['rp_uuid'],
            **{'OpenStack-API-Version': 'placement 1.39'})
        if response.status_code != 200:
            return None
        return {trait for trait in response.json()['traits']
                if trait.startswith('CUSTOM_FPGA_FUNCTION_ID_')}

    def _last_report(self):
        """When the host's last report began, as the database says."""
        connection = sqlite3.connect(
            os.path.join(self.state_dir, 'cyborg.sqlite'))
        try:
            return connection.execute(
                'SELECT created_at, updated_at FROM host_locks WHERE host = ?',
                (self.host,)).fetchone()
        except sqlite3.OperationalError:
            return None  # no table yet
        finally:
            connection.close()

    def _shows(self, count, traits):
        """The deployables once there are ``count`` and region1's function
        traits in Placement are ``traits``; else None."""
        deployables = self._deployables()
        if deployables is None or len(deployables) != count:
            return None
        if self._function_traits(deployables[REGION]) != traits:
            return None
        return deployables

    def _below_region1(self):
        return sorted(name for name, (parent, _, _)
                      in self._deployable_tree().items() if parent == REGION)

    # -- Starting and stopping -----------------------------------------------

    def _stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            exit_code = self.process.wait(test_aio.STOP_TIMEOUT * 3)
        except subprocess.TimeoutExpired:
            self.fail('cyborg-aio still running after SIGINT')
        self.assertEqual(0, exit_code, self._log())

    def _restart(self):
        """Start again; return once two reports of the new agent began, so
        that its first one (and its Placement sync) is done."""
        before = self._last_report()
        self.addDetail('cyborg-aio-log-before-restart',
                       content.text_content(self._log()))
        self._start()
        for _ in range(2):
            before = self._wait_for(
                'a report of the restarted agent',
                lambda seen=before: self._last_report() not in (seen, None)
                and self._last_report())

    def _program(self):
        result = subprocess.run(
            ['bash', '-euo', 'pipefail', '-c',
             test_program_aio.readme_commands(self.api_url)],
            capture_output=True, text=True, cwd=test_program_aio.ROOT,
            env=self.environment, timeout=test_program_aio.COMMAND_TIMEOUT)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout

    # -- The test --------------------------------------------------------------

    def test_restart_keeps_the_bitstream_and_a_power_cycle_clears_it(self):
        self._start()
        blank = self._wait_for('the fleet', lambda: self._shows(BLANK, set()))
        self.assertIsNone(blank[REGION]['bitstream_id'])
        answer = self._program()
        self.assertIn('"bitstream_id"', answer)
        programmed = self._wait_for(
            'region1 programmed',
            lambda: self._shows(PROGRAMMED, {FUNCTION_TRAIT}))
        image_id = programmed[REGION]['bitstream_id']
        self.assertIsNotNone(image_id)
        state_file = fake_state.state_file(self.state_dir, self.host)
        self.assertTrue(os.path.exists(state_file))

        self._stop()
        self._restart()

        after = self._shows(PROGRAMMED, {FUNCTION_TRAIT})
        self.assertIsNotNone(after, (self._deployables() or {}).keys())
        self.assertEqual(sorted(programmed), sorted(after))
        self.assertEqual(image_id, after[REGION]['bitstream_id'])
        self.assertEqual(
            {name: item['uuid'] for name, item in programmed.items()},
            {name: item['uuid'] for name, item in after.items()})
        self.assertEqual(['%s-pf%d' % (REGION, pf) for pf in range(2)],
                         self._below_region1())

        # The power cycle: the card loses what it held while stopped.
        self._stop()
        os.unlink(state_file)
        self._restart()

        cycled = self._shows(BLANK, set())
        self.assertIsNotNone(cycled, (self._deployables() or {}).keys())
        self.assertEqual(sorted(blank), sorted(cycled))
        self.assertIsNone(cycled[REGION]['bitstream_id'])
        self.assertEqual([REGION + '-pf0'], self._below_region1())
        self.assertEqual(test_aio.FLEET_TREE, self._deployable_tree())
        self._stop()

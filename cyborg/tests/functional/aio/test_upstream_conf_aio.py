"""cyborg-aio started with an OpenStack Cyborg 17.0.0 cyborg.conf.

The all-in-one reads the upstream file (every upstream option set,
``cyborg.tests.fixtures.upstream_conf``) and then its own: free ports, and
its embedded Placement and Glance back in [placement] and [glance], whose
upstream values name a deployment's own (the operator guide says so). It
comes up, serves the simulated fleet, reads the renamed options under
their new names and logs the unknown ones in one warning.
"""

import re
import signal

from cyborg.tests.fixtures import upstream_conf
from cyborg.tests.functional.aio import test_aio

UNKNOWN_WARNING = re.compile(r'does not know \([^)]*\): (.*)\. The operator')


class TestAllInOneWithUpstreamConf(test_aio.AllInOneProcess):

    def setUp(self):
        super().setUp()
        self.upstream_path = upstream_conf.write(self.directory)
        with open(self.config_path, 'a') as config_file:
            config_file.write(
                '[placement]\nauth_type = admin_token\n'
                '[glance]\nendpoint_override = http://127.0.0.1:%d\n'
                % self.glance_port)

    def _config_files(self):
        # The upstream file first: the all-in-one's own file wins.
        return [self.upstream_path, self.config_path]

    def test_comes_up_with_the_upstream_file(self):
        self._start()
        self._wait_for('answer from GET /v2', self._api_version)
        devices = self._wait_for('the simulated fleet in GET /v2/devices',
                                 self._devices)
        self.assertEqual(3, len(devices), devices)

        log = self._log()
        self.assertEqual([', '.join(upstream_conf.unknown_names())],
                         UNKNOWN_WARNING.findall(log))
        # [DEFAULT] periodic_interval is the agent's report_interval, over
        # the all-in-one's default of 10 s.
        self._wait_for('the agent reading periodic_interval', lambda: (
            'Option "periodic_interval" from group "DEFAULT" is deprecated. '
            'Use option "report_interval" from group "agent".'
            in self._log()))

        self.process.send_signal(signal.SIGINT)
        self.assertEqual(0, self.process.wait(test_aio.STOP_TIMEOUT + 20))

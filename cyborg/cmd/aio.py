"""cyborg-aio: the whole service on one host, in one process, with no setup.

``cyborg-aio`` with no argument is enough: ``--config-file`` and
``--config-dir`` values win over the all-in-one defaults of
``cyborg.aio.conf``, and no other file is read.
"""

import logging
import signal
import sys
import threading

from oslo_log import log

from cyborg.aio import conf as aio_conf
from cyborg.aio import launcher
from cyborg.common import listening
from cyborg import conf
from cyborg.conf import upstream as upstream_conf
from cyborg import objects
from cyborg import service

LOG = logging.getLogger(__name__)

# How often the main thread looks up from waiting; signals are handled then.
WAKE_UP_SECONDS = 1


def main(argv=None):
    """Run the all-in-one until SIGINT or SIGTERM; return the exit code."""
    argv = sys.argv if argv is None else argv
    aio_conf.set_defaults(conf.CONF)
    conf.CONF(argv[1:], project='cyborg', default_config_files=[],
              default_config_dirs=[])
    log.setup(conf.CONF, 'cyborg')
    upstream_conf.warn_unknown_options(conf.CONF)
    objects.register_all()

    stop_requested = threading.Event()

    def request_stop(signal_number, frame):
        LOG.info('%s received, stopping', signal.Signals(signal_number).name)
        stop_requested.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    all_in_one = launcher.AllInOne(conf.CONF)
    try:
        all_in_one.start()
    except listening.ListenError as error:
        listen_error = error
    except Exception:
        LOG.exception('The all-in-one failed to start')
        return 1
    else:
        listen_error = None
    if listen_error is not None:
        # A port in use: one line, which port, which service, which option
        # moves it (logged outside the handler: no exception appended).
        LOG.error('The all-in-one failed to start: %s', listen_error)
        return 1
    LOG.info('cyborg all-in-one ready: API %s, fleet page %s, metrics %s, '
             'Placement %s, host %s, state in %s', all_in_one.api_url,
             all_in_one.fleet_page_url or '(off)',
             all_in_one.metrics_url or '(off)', all_in_one.placement_url,
             conf.CONF.host, conf.CONF.aio.state_dir)
    service.settle_heap()
    while not stop_requested.wait(WAKE_UP_SECONDS):
        pass
    all_in_one.stop()
    LOG.info('cyborg all-in-one stopped')
    return 0

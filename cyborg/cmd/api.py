"""cyborg-api: serves the REST API with a threaded server until SIGTERM."""

import logging
import sys

from cyborg.api import app
from cyborg.api.fleet import port as fleet_port
from cyborg.common import listening
from cyborg import conf
from cyborg.conf import opts
from cyborg.db import api as db_api
from cyborg import rpc
from cyborg import service

LOG = logging.getLogger(__name__)


def main():
    """Run cyborg-api on [api] host_ip:port until SIGTERM or SIGINT."""
    opts.set_defaults()
    service.prepare_service(sys.argv)
    db_api.configure(conf.CONF, wait_for_database=False)
    application = app.setup_app(conf.CONF)
    api_server = app.api_server(conf.CONF, application)
    page_server = fleet_port.page_server(conf.CONF, application)
    service.settle_heap()
    listen_error = None
    try:
        if page_server is not None:
            page_server.start()
            LOG.info('The fleet page: %s', fleet_port.address(
                conf.CONF.api.host_ip, page_server.port))
        if conf.CONF.metrics.enabled:
            api_server.start()
            LOG.info('cyborg-api serves Prometheus metrics at %s',
                     fleet_port.address(conf.CONF.api.host_ip,
                                        api_server.port, '/metrics'))
        api_server.serve_forever()
    except listening.ListenError as error:
        listen_error = error
    finally:
        if page_server is not None:
            page_server.stop()
        rpc.cleanup()
    if listen_error is not None:
        # One line: which port, which service, which option moves it.
        LOG.error('cyborg-api cannot start: %s', listen_error)
        return 1
    LOG.info('cyborg-api stopped')
    return 0

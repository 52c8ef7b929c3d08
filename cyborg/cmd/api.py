"""cyborg-api: serves the REST API with a threaded server until SIGTERM."""

import logging
import sys

from cyborg.api import app
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
    api_server = app.api_server(conf.CONF)
    service.settle_heap()
    try:
        api_server.serve_forever()
    finally:
        rpc.cleanup()
    LOG.info('cyborg-api stopped')
    return 0

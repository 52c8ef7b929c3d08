"""cyborg-api: serves the REST API with a threaded server until SIGTERM."""

import logging
import sys

from cyborg.api import app
from cyborg.api import server
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
    db_api.configure(conf.CONF)
    api_server = server.Server(
        app.setup_app(conf.CONF), conf.CONF.api.host_ip, conf.CONF.api.port,
        threads=conf.CONF.api.api_workers, name='cyborg-api')
    try:
        api_server.serve_forever()
    finally:
        rpc.cleanup()
    LOG.info('cyborg-api stopped')
    return 0

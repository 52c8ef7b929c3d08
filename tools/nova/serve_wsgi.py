"""Serve one OpenStack service's WSGI application on 127.0.0.1.

Run with the Python of the Nova virtualenv (``.nova-venv``) by the Nova
tests' fixtures (``cyborg.tests.fixtures.nova`` and ``.neutron``)::

    python serve_wsgi.py --port PORT [--paste-config PASTE] \
        --config-file FILE MODULE

``MODULE`` is the service's WSGI entry point (``nova.wsgi.osapi_compute``,
``neutron.wsgi.api``), which reads its configuration from the files that
``OS_NOVA_CONFIG_FILES`` and ``OS_NEUTRON_CONFIG_FILES`` name: both are set
to ``FILE``, after ``PASTE`` when given (Nova reads its paste pipeline from
the first file). With ``--config-in-argv`` the entry point finds
``--config-file FILE`` on its command line instead (OpenStack Cyborg's
``cyborg.wsgi.api``, run from its own virtualenv by
``cyborg.tests.fixtures.upstream_cyborg``); ``--also-under PREFIX`` serves
the application under ``PREFIX`` too (PREFIX moved to SCRIPT_NAME), as a
web server mounting it there would (OpenStack Cyborg's links name
``/accelerator/v2`` wherever it runs). Requests are served by
wsgiref from a thread each, as uwsgi's threads would; SIGTERM stops the
server.
"""

import argparse
import importlib
import logging
import os
import signal
import socketserver
import sys
import threading
from wsgiref import simple_server

LOG = logging.getLogger('serve_wsgi')


class _Handler(simple_server.WSGIRequestHandler):
    """One access line per request on stderr (the service's log)."""

    def log_message(self, format, *args):
        sys.stderr.write('serve_wsgi: %s\n' % (format % args))


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # Nova's and Neutron's clients keep connections open.
    request_queue_size = 64


def _also_under(prefix, application):
    """``application``, also answering under ``prefix``."""
    def mounted(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path == prefix or path.startswith(prefix + '/'):
            environ['SCRIPT_NAME'] = environ.get('SCRIPT_NAME', '') + prefix
            environ['PATH_INFO'] = path[len(prefix):]
        return application(environ, start_response)
    return mounted


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--paste-config')
    parser.add_argument('--config-in-argv', action='store_true')
    parser.add_argument('--also-under')
    parser.add_argument('module')
    args = parser.parse_args()
    config_file = os.path.abspath(args.config_file)
    files = [config_file]
    if args.paste_config:
        files.insert(0, os.path.abspath(args.paste_config))
    os.environ['OS_NOVA_CONFIG_FILES'] = ';'.join(files)
    os.environ['OS_NEUTRON_CONFIG_FILES'] = ';'.join(files)
    # The entry points parse sys.argv as their command line.
    sys.argv = [args.module]
    if args.config_in_argv:
        sys.argv += ['--config-file', config_file]
    application = importlib.import_module(args.module).application
    # SQLAlchemy adds the backref attributes of the models when it first
    # configures its mappers, which the first query does; Neutron's port
    # list reads one (Port.port_forwardings) as a class attribute before
    # its query, so a port list as first request fails. Configured now,
    # as any earlier request would have.
    orm = sys.modules.get('sqlalchemy.orm')
    if orm is not None:
        orm.configure_mappers()
    if args.also_under:
        application = _also_under(args.also_under.rstrip('/'), application)
    server = simple_server.make_server(
        '127.0.0.1', args.port, application, server_class=_Server,
        handler_class=_Handler)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    sys.stderr.write('serve_wsgi: %s listening on 127.0.0.1:%d\n'
                     % (args.module, args.port))
    sys.stderr.flush()
    server.serve_forever()
    server.server_close()


if __name__ == '__main__':
    main()

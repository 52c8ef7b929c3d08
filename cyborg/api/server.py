"""A threaded HTTP server for any WSGI application, on cheroot.

oslo.service's WSGI server needs eventlet, so cyborg-api, and the all-in-one
for both the API and Placement, serve their WSGI apps with this class.
"""

import logging
import os
import signal
import threading

from cheroot import wsgi

LOG = logging.getLogger(__name__)

THREADS_PER_CPU = 16

# How often serve_forever looks up from waiting; signals are handled then.
WAKE_UP_SECONDS = 1


def default_threads():
    """The number of request threads when none is configured."""
    return THREADS_PER_CPU * (os.cpu_count() or 1)


class _CherootServer(wsgi.Server):
    """cheroot's WSGI server, logging through ``logging`` instead of stderr."""

    def error_log(self, msg='', level=logging.INFO, traceback=False):
        LOG.log(level, '%s', msg, exc_info=traceback)


class Server:
    """Serves one WSGI application on host:port with a pool of threads.

    ``start`` returns once the socket listens (``port`` is then the bound
    port, so port 0 picks a free one); ``serve_forever`` blocks until
    ``stop``, SIGTERM or SIGINT.
    """

    def __init__(self, app, host, port, threads=None, name='cyborg-api'):
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads or default_threads()
        self.name = name
        self._server = None
        self._thread = None
        self._stop_requested = threading.Event()
        self._lock = threading.Lock()

    def start(self):
        """Bind, listen and serve in a background thread."""
        with self._lock:
            if self._server is not None:
                return
            self._stop_requested.clear()
            server = _CherootServer((self.host, self.port), self.app,
                                    numthreads=self.threads, max=self.threads)
            server.prepare()
            self.port = server.bind_addr[1]
            self._server = server
            self._thread = threading.Thread(target=server.serve,
                                            name='%s-server' % self.name,
                                            daemon=True)
            self._thread.start()
        LOG.info('%s listening on %s:%s with %d threads', self.name,
                 self.host, self.port, self.threads)

    def stop(self):
        """Stop accepting, let requests in progress finish, then return."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            self._stop_requested.set()
        if server is None:
            return
        server.stop()
        thread.join()
        LOG.info('%s on %s:%s stopped', self.name, self.host, self.port)

    def serve_forever(self):
        """Serve until ``stop`` is called or SIGTERM/SIGINT arrives."""
        previous_handlers = self._handle_stop_signals()
        try:
            self.start()
            while not self._stop_requested.wait(WAKE_UP_SECONDS):
                pass
        finally:
            self.stop()
            for signal_number, handler in previous_handlers.items():
                signal.signal(signal_number, handler)

    def _handle_stop_signals(self):
        if threading.current_thread() is not threading.main_thread():
            # Only the main thread may install signal handlers.
            return {}

        def request_stop(signal_number, frame):
            LOG.info('%s received, stopping %s',
                     signal.Signals(signal_number).name, self.name)
            self._stop_requested.set()

        return {signal_number: signal.signal(signal_number, request_stop)
                for signal_number in (signal.SIGTERM, signal.SIGINT)}

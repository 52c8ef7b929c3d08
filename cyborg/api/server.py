"""A threaded HTTP server for any WSGI application, on cheroot.

oslo.service's WSGI server needs eventlet, so cyborg-api, and the all-in-one
for both the API and Placement, serve their WSGI apps with this class.

How a burst of clients is held: the kernel keeps up to ``backlog``
connections not yet accepted (cheroot's default of 5 reset the clients of
a burst); an accepted connection with a request waits for one of the
``threads`` in a queue of at most ``max_queued``; beyond that, instead of
closing the connection, a small pool of its own answers ``503 Service
Unavailable`` with ``Retry-After`` and the body it was given, after
reading the request (a connection closed with unread data is reset).

An answer is sent from its own bytes (``_Connection``): cheroot's writer
copies each one into a buffer and that buffer again into the bytes it
sends, two new copies of a 500 kB list that cost more than sending it.
"""

import concurrent.futures
import io
import logging
import os
import queue
import signal
import socket
import threading

from cheroot import makefile
from cheroot import server as cheroot_server
from cheroot import wsgi

from cyborg.common import listening

LOG = logging.getLogger(__name__)

THREADS_PER_CPU = 16
# Defaults of the [api] options of the same names (oslo.service's WSGI
# server listens with a backlog of 4096 too).
DEFAULT_BACKLOG = 4096
DEFAULT_MAX_QUEUED = 1024
DEFAULT_RETRY_AFTER = 1

# How often serve_forever looks up from waiting; signals are handled then.
WAKE_UP_SECONDS = 1
# The 503 answers: threads, and how long a client may take to send its
# request or read the answer.
BUSY_THREADS = 4
BUSY_IO_SECONDS = 2
# A request longer than this (head or body) is not read to its end; the
# connection is closed after the answer anyway.
BUSY_READ_LIMIT = 1024 * 1024


def default_threads():
    """The number of request threads when none is configured."""
    return THREADS_PER_CPU * (os.cpu_count() or 1)


def busy_body(message):
    """A plain JSON body for the 503 of a full queue."""
    return 'application/json', ('{"message": "%s"}' % message).encode()


class _BusyAnswers:
    """Answers the connections no thread or queue place is left for."""

    def __init__(self, content_type, body, retry_after):
        head = ('HTTP/1.1 503 Service Unavailable\r\n'
                'Retry-After: %d\r\nContent-Type: %s\r\n'
                'Content-Length: %d\r\nConnection: close\r\n\r\n'
                % (retry_after, content_type, len(body)))
        self._response = head.encode('ascii') + body
        self._pool = concurrent.futures.ThreadPoolExecutor(
            BUSY_THREADS, thread_name_prefix='busy-answer')

    def answer(self, connection):
        self._pool.submit(self._answer, connection)

    def stop(self):
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _answer(self, connection):
        try:
            connection.socket.settimeout(BUSY_IO_SECONDS)
            _read_request(connection.rfile)
            connection.wfile.write(self._response)
            connection.wfile.flush()
            # Let the client read the answer before the close.
            connection.socket.shutdown(socket.SHUT_WR)
            _drain(connection.socket)
        except OSError:
            # The client went away or is too slow: it has no answer to get.
            pass
        finally:
            connection.close()


def _read_request(stream):
    """Read one request's head and its body (up to BUSY_READ_LIMIT)."""
    length = 0
    read = 0
    while read < BUSY_READ_LIMIT:
        line = stream.readline(BUSY_READ_LIMIT)
        if not line or line in (b'\r\n', b'\n'):
            break
        read += len(line)
        name, _, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            try:
                length = int(value.strip())
            except ValueError:
                length = 0
    remaining = min(max(length, 0), BUSY_READ_LIMIT)
    while remaining > 0:
        chunk = stream.read(min(remaining, 65536))
        if not chunk:
            break
        remaining -= len(chunk)


def _drain(sock):
    """Read what the client still sends until it closes (or the timeout)."""
    while sock.recv(65536):
        pass


class _Writer(makefile.StreamWriter):
    """cheroot's socket writer, sending each write from the caller's bytes.

    cheroot's own appends them to a bytearray and sends ``bytes()`` of it:
    two copies of an answer, new memory each time for a large one. Like
    it, a write returns once every byte is sent (each send waiting at most
    the socket's timeout) and counts them in ``bytes_written``.
    """

    def write(self, data, *args, **kwargs):
        self._checkClosed()
        view = memoryview(data).cast('B')
        with self._write_lock:
            self._flush_unlocked()  # nothing, unless a write failed earlier
            while view:
                try:
                    sent = self.raw.write(view)
                except io.BlockingIOError as error:
                    sent = error.characters_written
                view = view[sent or 0:]
        self.bytes_written += len(data)
        return len(data)


class _Connection(cheroot_server.HTTPConnection):
    """cheroot's connection, writing answers with ``_Writer`` on a plain
    socket (a TLS adapter's files are left as they are)."""

    def __init__(self, server, sock, makefile=makefile.MakeFile):
        super().__init__(server, sock, makefile)
        if makefile is cheroot_server.MakeFile:
            self.wfile = _Writer(sock, 'wb', self.wbufsize)


class _CherootServer(wsgi.Server):
    """cheroot's WSGI server, logging through ``logging`` instead of stderr,
    answering 503 itself when its queue is full (see the module), writing
    answers without copying them (``_Writer``)."""

    ConnectionClass = _Connection

    def __init__(self, *args, busy_answers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.busy_answers = busy_answers

    def process_conn(self, conn):
        try:
            self.requests.put(conn)
        except queue.Full:
            self.busy_answers.answer(conn)

    def error_log(self, msg='', level=logging.INFO, traceback=False):
        LOG.log(level, '%s', msg, exc_info=traceback)


class Server:
    """Serves one WSGI application on host:port with a pool of threads.

    ``start`` returns once the socket listens (``port`` is then the bound
    port, so port 0 picks a free one); ``serve_forever`` blocks until
    ``stop``, SIGTERM or SIGINT.
    """

    def __init__(self, app, host, port, threads=None, name='cyborg-api',
                 backlog=DEFAULT_BACKLOG, max_queued=DEFAULT_MAX_QUEUED,
                 retry_after=DEFAULT_RETRY_AFTER, busy=None, option=None):
        """``busy`` is the (content type, body) of the 503 answered when
        ``max_queued`` requests wait for a thread already; ``option``
        names the option that sets ``port`` (``[api] port``), for the
        message of a port that cannot be listened on."""
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads or default_threads()
        self.name = name
        self.backlog = backlog
        self.max_queued = max_queued
        self.retry_after = retry_after
        self.busy = busy or busy_body('%s is busy; retry later.' % name)
        self.option = option
        self._server = None
        self._thread = None
        self._stop_requested = threading.Event()
        self._lock = threading.Lock()

    def start(self):
        """Bind, listen and serve in a background thread.

        :raises: cyborg.common.listening.ListenError when the address cannot
            be listened on (a port in use, an address this host does not
            have).
        """
        with self._lock:
            if self._server is not None:
                return
            self._stop_requested.clear()
            busy_answers = _BusyAnswers(*self.busy,
                                        retry_after=self.retry_after)
            # A put that finds the queue full fails at once (timeout 0)
            # rather than holding up the accepting thread.
            server = _CherootServer(
                (self.host, self.port), self.app, numthreads=self.threads,
                max=self.threads, request_queue_size=self.backlog,
                accepted_queue_size=self.max_queued,
                accepted_queue_timeout=0, busy_answers=busy_answers)
            try:
                server.prepare()
            except OSError as error:
                busy_answers.stop()
                raise listening.ListenError(
                    self.name, self.host, self.port,
                    listening.failure_reason(error), self.option) from error
            self.port = server.bind_addr[1]
            self._server = server
            self._thread = threading.Thread(target=server.serve,
                                            name='%s-server' % self.name,
                                            daemon=True)
            self._thread.start()
        LOG.info('%s listening on %s:%s with %d threads, a backlog of %d '
                 'and at most %d requests queued', self.name, self.host,
                 self.port, self.threads, self.backlog, self.max_queued)

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
        server.busy_answers.stop()
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

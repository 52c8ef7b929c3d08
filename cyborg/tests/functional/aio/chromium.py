"""Headless Chromium driven over the DevTools protocol, for page tests.

Chromium runs with ``--remote-debugging-pipe``: it reads protocol messages
from file descriptor 3 and writes to 4, each a JSON object ended by a NUL
byte, so the standard library is all a test needs (no websocket client, no
Selenium). Debian's ``chromium`` package (``tools/install.sh`` installs
it) or ``$CYBORG_CHROMIUM`` is the browser.
"""

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

COMMAND_TIMEOUT = 30
# Descriptors of the pipes are moved at least this high, so that the
# shell's "3<&n 4>&m" cannot overwrite one with the other (bash: dash
# takes single-digit descriptors only).
_HIGH_FD = 10


def find_binary():
    """The Chromium executable, or None."""
    configured = os.environ.get('CYBORG_CHROMIUM')
    if configured:
        return configured
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        path = shutil.which(name)
        if path:
            return path
    return None


class ProtocolError(Exception):
    """Chromium answered a command with an error, or went away."""


def _high(fd):
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, _HIGH_FD)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium with one page (tab) attached."""

    def __init__(self, binary, width=1400, height=900):
        self._profile = tempfile.mkdtemp(prefix='cyborg-chromium-')
        chrome_reads, self._to_chrome = (_high(fd) for fd in os.pipe())
        self._from_chrome, chrome_writes = (_high(fd) for fd in os.pipe())
        arguments = [binary, '--headless', '--remote-debugging-pipe',
                     '--no-sandbox', '--disable-gpu',
                     '--disable-dev-shm-usage', '--no-first-run',
                     '--no-default-browser-check', '--hide-scrollbars',
                     '--user-data-dir=' + self._profile,
                     '--window-size=%d,%d' % (width, height), 'about:blank']
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            ['/bin/bash', '-c', 'exec "$@" 3<&%d 4>&%d'
             % (chrome_reads, chrome_writes), 'sh'] + arguments,
            pass_fds=(chrome_reads, chrome_writes), stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        os.close(chrome_reads)
        os.close(chrome_writes)
        self._buffer = b''
        self._next_id = 0
        self.events = []
        self.session = None
        target = self.command('Target.createTarget', url='about:blank')
        self.session = self.command('Target.attachToTarget',
                                    targetId=target['targetId'],
                                    flatten=True)['sessionId']
        self.command('Page.enable')
        self.command('Runtime.enable')
        self.command('Emulation.setDeviceMetricsOverride', width=width,
                     height=height, deviceScaleFactor=1, mobile=False)

    def close(self):
        """End Chromium and remove its profile."""
        try:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            for fd in (self._to_chrome, self._from_chrome):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self._profile, ignore_errors=True)

    def output(self):
        """What Chromium wrote to stdout and stderr."""
        self.log.seek(0)
        return self.log.read().decode('utf-8', 'replace')

    def _read_message(self, deadline):
        while b'\0' not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProtocolError('no message from Chromium in time')
            ready, _, _ = select.select([self._from_chrome], [], [],
                                        remaining)
            if not ready:
                continue
            chunk = os.read(self._from_chrome, 65536)
            if not chunk:
                raise ProtocolError('Chromium closed the pipe:\n'
                                    + self.output())
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b'\0', 1)
        return json.loads(message)

    def command(self, method, timeout=COMMAND_TIMEOUT, **params):
        """Send one command (to the page once attached); return its result.

        Events that arrive meanwhile go to ``events``.
        """
        self._next_id += 1
        message = {'id': self._next_id, 'method': method, 'params': params}
        if self.session is not None and not method.startswith('Target.'):
            message['sessionId'] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b'\0')
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get('id') != self._next_id:
                self.events.append(answer)
                continue
            if 'error' in answer:
                raise ProtocolError('%s: %s' % (method, answer['error']))
            return answer.get('result', {})

    def wait_event(self, method, timeout=COMMAND_TIMEOUT):
        """The first event ``method`` not seen yet (it is consumed)."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get('method') == method:
                    return self.events.pop(index)
            self.events.append(self._read_message(deadline))

    def navigate(self, url):
        """Load ``url`` and wait for its load event."""
        self.events = [event for event in self.events
                       if event.get('method') != 'Page.loadEventFired']
        result = self.command('Page.navigate', url=url)
        if result.get('errorText'):
            raise ProtocolError('%s: %s' % (url, result['errorText']))
        self.wait_event('Page.loadEventFired')

    def evaluate(self, expression, timeout=COMMAND_TIMEOUT):
        """The value of the JavaScript ``expression`` (a promise is awaited).

        :raises: ProtocolError when it throws
        """
        result = self.command('Runtime.evaluate', timeout=timeout,
                              expression=expression, returnByValue=True,
                              awaitPromise=True)
        if 'exceptionDetails' in result:
            raise ProtocolError('%s threw: %s' % (
                expression, json.dumps(result['exceptionDetails'])))
        return result['result'].get('value')

    def wait_for(self, condition, timeout=20):
        """Wait in the page until the JavaScript ``condition`` is true.

        :raises: ProtocolError when it is still false after ``timeout`` s
        """
        expression = '''new Promise(function (resolve) {
            var deadline = Date.now() + %d;
            (function check() {
                var value = false;
                try { value = Boolean(%s); } catch (error) {}
                if (value || Date.now() > deadline) { resolve(value); }
                else { setTimeout(check, 100); }
            })();
        })''' % (timeout * 1000, condition)
        if not self.evaluate(expression, timeout=timeout + 10):
            raise ProtocolError('still false after %s s: %s'
                                % (timeout, condition))

    def screenshot(self, path):
        """Save the whole page (not only the window) as a PNG at ``path``."""
        metrics = self.command('Page.getLayoutMetrics')
        size = metrics['cssContentSize']
        data = self.command('Page.captureScreenshot', format='png',
                            captureBeyondViewport=True, clip={
                                'x': 0, 'y': 0, 'width': size['width'],
                                'height': size['height'], 'scale': 1})['data']
        with open(path, 'wb') as image:
            image.write(base64.b64decode(data))
        return path

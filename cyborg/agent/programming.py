"""The agent's side of programming an FPGA region (``AgentManager.program``).

It finds the deployable among those the drivers last discovered, gets the
image from the agent's bitstream cache or downloads it (``downloaded``,
which a bind's prepare uses too), has the vendor driver load it, reads
back what the region then holds (``verify``, which a bind's prepare uses
too) and answers the ``ProgramResult`` code with a message, as a dict that
crosses RPC: a load the region does not confirm is FAILED.
"""

import contextlib
import logging
import os
import shutil
import tempfile
import threading

from cyborg import bitstream as bitstreams
from cyborg.common import vocabulary
from cyborg import exception
from cyborg.agent import metrics as agent_metrics
from cyborg.agent.drivers import base as drivers_base

LOG = logging.getLogger(__name__)
ProgramResult = vocabulary.ProgramResult
# The name of the downloaded file in its private directory.
FILE_NAME = 'bitstream'
# Glance's answers meaning the image itself cannot be used.
_BAD_IMAGE = (exception.ImageNotFound, exception.ImageTooLarge,
              exception.ImageDataInvalid)


class ReportGate:
    """Keeps one host's inventory reports and programmings apart.

    The conductor takes a report's word for the image each region holds
    once no programming lock is held on it, so a report collected before a
    programming ended but applied after the conductor recorded it would
    undo the record. A report therefore waits for the programmings under
    way, and a programming for a report in flight (until the conductor has
    applied it); programmings of different regions run side by side, and
    a waiting report goes before programmings that come after it.
    """

    def __init__(self):
        self._changed = threading.Condition()
        self._programmings = 0
        self._reporting = False
        self._reports_waiting = 0

    @contextlib.contextmanager
    def programming(self):
        """Held while a region is being loaded."""
        with self._changed:
            while self._reporting or self._reports_waiting:
                self._changed.wait()
            self._programmings += 1
        try:
            yield
        finally:
            with self._changed:
                self._programmings -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def reporting(self):
        """Held from collecting a report until the conductor applied it."""
        with self._changed:
            self._reports_waiting += 1
            try:
                while self._reporting or self._programmings:
                    self._changed.wait()
            finally:
                self._reports_waiting -= 1
            self._reporting = True
        try:
            yield
        finally:
            with self._changed:
                self._reporting = False
                self._changed.notify_all()


def answer(code, message, loaded=None, suspect=False):
    """The RPC answer of one programming request.

    ``loaded`` (a ``Readback``) is what the region reported holding once
    loaded and verified: the conductor records it (``loaded``, a dict).
    ``suspect`` says that the region's content is in doubt (the driver
    failed or the region does not hold what was asked): the conductor
    marks the region degraded.
    """
    result = {'code': int(code), 'message': message}
    if loaded is not None:
        result['loaded'] = loaded.as_dict()
    if suspect:
        result['suspect'] = True
    return result


class VerificationFailed(Exception):
    """A region does not show the image just loaded, or cannot be read."""


def verify(driver, controlpath_id, deployable_name, image_id, bitstream):
    """What the region holds once ``image_id`` (metadata ``bitstream``, a
    ``cyborg.bitstream.Bitstream`` or None) was loaded into it: a
    ``Readback``, or None when the driver cannot read regions back.

    :raises: VerificationFailed saying what the region reports instead,
        or why it cannot be read
    """
    try:
        readback = driver.loaded(controlpath_id, deployable_name)
    except Exception as error:
        if not isinstance(error, drivers_base.ReadbackFailed):
            LOG.exception('Reading back deployable %s failed',
                          deployable_name)
        raise VerificationFailed(
            'verification failed: what deployable %s holds cannot be read: '
            '%s' % (deployable_name, error)) from error
    if readback is None:
        return None
    problem = drivers_base.readback_problem(
        readback, image_id, getattr(bitstream, 'function_uuid', None))
    if problem is not None:
        LOG.warning('Deployable %s: %s', deployable_name, problem)
        raise VerificationFailed(problem)
    return readback


def program(request, drivers, deployables, glance, max_bytes, cache=None):
    """Program ``request`` (a ProgramRequest); return the answer dict.

    ``drivers`` maps driver names to drivers, ``deployables`` is the
    agent's DeployableCache, ``glance`` a GlanceClient with the agent's
    credentials, ``max_bytes`` the largest image downloaded and ``cache``
    the agent's BitstreamCache (see ``downloaded``).
    """
    try:
        found = find_deployable(drivers, deployables, request.driver_name,
                                request.deployable_name)
    except Exception as error:
        LOG.exception('Driver %s failed to discover', request.driver_name)
        return answer(ProgramResult.FAILED, 'discovery failed: %s: %s'
                      % (type(error).__name__, error))
    if found is None:
        return answer(ProgramResult.INVALID_DEPLOYABLE,
                      'this host reports no deployable %s of driver %s'
                      % (request.deployable_name, request.driver_name))
    device, driver = found
    readback = None
    try:
        with downloaded(glance, request.image_id, max_bytes,
                        cache) as loaded:
            path, bitstream = loaded
            outcome = _call_driver(driver, device, path, request, bitstream)
            if outcome.succeeded:
                outcome, readback = _verified(driver, device, request,
                                              bitstream, outcome)
            # The caller knows the image, not this host's temporary file.
            message = hide_path(outcome.message, path, request.image_id)
    except DownloadFailed as error:
        return answer(error.code, error.message)
    # A failure of the driver may have left anything in the region.
    suspect = outcome.code is ProgramResult.FAILED
    if outcome.succeeded or suspect:
        refresh(deployables, request.driver_name, driver)
    return answer(outcome.code, message or outcome.message, loaded=readback,
                  suspect=suspect)


def _verified(driver, device, request, bitstream, outcome):
    """``(outcome, readback)`` once the region is read back: the driver's
    outcome when it holds the image, else FAILED with the reason."""
    try:
        readback = verify(driver, device.controlpath_id,
                          request.deployable_name, request.image_id,
                          bitstream)
    except VerificationFailed as error:
        return drivers_base.ProgramOutcome(ProgramResult.FAILED,
                                           str(error)), None
    return outcome, readback


class DownloadFailed(Exception):
    """A bitstream could not be downloaded: a ``ProgramResult`` ``code`` and a
    ``message`` saying why."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


@contextlib.contextmanager
def downloaded(glance, image_id, max_bytes, cache=None):
    """A verified local file of image ``image_id``.

    Yields ``(path, bitstream)``: the file (hash verified, at most
    ``max_bytes``) and its bitstream metadata (None when they no longer
    follow the standard). With ``cache`` (the agent's enabled
    ``BitstreamCache``) the file is the cached one, downloaded only when
    the cache lacks it or its copy no longer has the image's hash, and
    kept until the block ends; without, it is downloaded into a private
    temporary directory removed when the block ends, whatever happened.
    Used by programming requests and by binds alike.

    :raises: DownloadFailed (INVALID_BITSTREAM when the image cannot be
        used, FAILED when Glance cannot be reached)
    """
    if cache is not None and cache.enabled:
        with contextlib.ExitStack() as stack:
            with _glance_failures():
                path, image = stack.enter_context(
                    cache.use(glance, image_id, max_bytes))
            yield path, _bitstream_of(image_id, image)
        return
    directory = tempfile.mkdtemp(prefix='cyborg-program-')
    try:
        path = os.path.join(directory, FILE_NAME)
        yield path, _download(glance, image_id, path, max_bytes)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def hide_path(message, path, image_id):
    """``message`` naming the image instead of its temporary ``path``."""
    return (message or '').replace(path, 'image %s' % image_id)


class ProgramRequest:
    """What the conductor asks: a driver's deployable and a Glance image."""

    def __init__(self, driver_name, deployable_name, image_id):
        self.driver_name = driver_name
        self.deployable_name = deployable_name
        self.image_id = image_id


def find_deployable(drivers, deployables, driver_name, deployable_name):
    """(device, driver) of the named deployable, or None if not reported.

    The cached inventory first; then the driver discovers once, which
    refreshes its entry.
    """
    driver = drivers.get(driver_name)
    if driver is None:
        return None
    index = deployables.get(driver_name)
    if index is None or deployable_name not in index:
        index = deployables.replace(driver_name, driver.discover())
    found = index.get(deployable_name)
    return None if found is None else (found[0], driver)


@contextlib.contextmanager
def _glance_failures():
    """Glance's failures as DownloadFailed."""
    try:
        yield
    except _BAD_IMAGE as error:
        raise DownloadFailed(ProgramResult.INVALID_BITSTREAM,
                             error.message) from error
    except exception.CyborgException as error:
        raise DownloadFailed(ProgramResult.FAILED, error.message) from error


def _download(glance, image_id, path, max_bytes):
    """The Bitstream (or None) of the image written to ``path``.

    :raises: DownloadFailed
    """
    with _glance_failures():
        image = glance.download(image_id, path, max_bytes)
    agent_metrics.count_downloaded(os.path.getsize(path))
    return _bitstream_of(image_id, image)


def _bitstream_of(image_id, image):
    """The Bitstream of Glance's record ``image``, or None."""
    try:
        return bitstreams.Bitstream.from_image(image)
    except bitstreams.InvalidBitstream as error:
        # The conductor checked the metadata; a driver may do without.
        LOG.warning('Image %s changed since it was checked: %s', image_id,
                    error)
        return None


def _call_driver(driver, device, path, request, bitstream):
    """The driver's ProgramOutcome; FAILED when it raises (a bug)."""
    try:
        return driver.program(device.controlpath_id, path,
                              deployable_name=request.deployable_name,
                              bitstream=bitstream)
    except Exception as error:
        LOG.exception('Driver %s failed programming %s', request.driver_name,
                      request.deployable_name)
        return drivers_base.ProgramOutcome(
            ProgramResult.FAILED, '%s: %s' % (type(error).__name__, error))


def refresh(deployables, driver_name, driver):
    """Discover again so that binds see the programmed region."""
    try:
        deployables.replace(driver_name, driver.discover())
    except Exception:
        LOG.exception('Driver %s failed to discover after programming; '
                      'its cached inventory is dropped', driver_name)
        deployables.forget(driver_name)

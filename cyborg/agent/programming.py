"""The agent's side of programming an FPGA region (``AgentManager.program``).

The conductor has checked the request already (``cyborg.conductor.
programming``); the agent finds the deployable in the inventory of its last
report (``DeployableCache``, discovering again once when it is not there),
downloads the image with its own [glance] credentials into a private
temporary directory (hash verified, size bounded), has the vendor driver
load it (``Driver.program``, ``cyborg.agent.drivers.base``) and removes the
file whatever happened. The answer is seed 001's code and a message, as a
dict that crosses RPC: ``{'code': int, 'message': str}``.
"""

import logging
import os
import shutil
import tempfile

from cyborg import bitstream as bitstreams
from cyborg import exception
from cyborg.agent.drivers import base as drivers_base

LOG = logging.getLogger(__name__)
ProgramResult = drivers_base.ProgramResult
# The name of the downloaded file in its private directory.
FILE_NAME = 'bitstream'
# Glance's answers meaning the image itself cannot be used.
_BAD_IMAGE = (exception.ImageNotFound, exception.ImageTooLarge,
              exception.ImageDataInvalid)


def answer(code, message):
    """The RPC answer of one programming request."""
    return {'code': int(code), 'message': message}


def program(request, drivers, deployables, glance, max_bytes):
    """Program ``request`` (a ProgramRequest); return the answer dict.

    ``drivers`` maps driver names to drivers, ``deployables`` is the
    agent's DeployableCache, ``glance`` a GlanceClient with the agent's
    credentials and ``max_bytes`` the largest image downloaded.
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
    directory = tempfile.mkdtemp(prefix='cyborg-program-')
    try:
        path = os.path.join(directory, FILE_NAME)
        downloaded = _download(glance, request.image_id, path, max_bytes)
        if isinstance(downloaded, dict):
            return downloaded
        outcome = _call_driver(driver, device, path, request, downloaded)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if outcome.succeeded:
        _refresh(deployables, request.driver_name, driver)
    # The caller knows the image, not this host's temporary file.
    message = (outcome.message or '').replace(
        path, 'image %s' % request.image_id)
    return answer(outcome.code, message or outcome.message)


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


def _download(glance, image_id, path, max_bytes):
    """The Bitstream (or None) of the image written to ``path``, or the
    failure answer when it cannot be downloaded."""
    try:
        image = glance.download(image_id, path, max_bytes)
    except _BAD_IMAGE as error:
        return answer(ProgramResult.INVALID_BITSTREAM, error.message)
    except exception.CyborgException as error:
        return answer(ProgramResult.FAILED, error.message)
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


def _refresh(deployables, driver_name, driver):
    """Discover again so that binds see the programmed region."""
    try:
        deployables.replace(driver_name, driver.discover())
    except Exception:
        LOG.exception('Driver %s failed to discover after programming; '
                      'its cached inventory is dropped', driver_name)
        deployables.forget(driver_name)

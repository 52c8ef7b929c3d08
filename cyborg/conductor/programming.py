"""The conductor's part of programming an FPGA region with a Glance bitstream.

``Programmer.program`` checks a request (the deployable, its programming
lock, the caller's image and its fit) before any work, has the agent of
the device's host program the region and records the outcome in the
deployable's ``bitstream_id``: the image the region reported holding once
loaded (the agent reads it back), not merely the one asked. A failure that
leaves the region's content in doubt (the driver failed, the region did
not show the image, the agent did not answer) marks the region
``degraded``, in the transaction recording the failure, so that Placement
stops offering it until the health recovery brings it back. The
exceptions below say why a request failed, each with its HTTP code.
"""

import dataclasses
import datetime
import functools
import http
import logging
import os
import uuid

import oslo_messaging
from oslo_utils import timeutils

from cyborg import bitstream as bitstreams
from cyborg import bitstream_fit
from cyborg.common import vocabulary
from cyborg import exception
from cyborg import objects
from cyborg.conductor import bind_finishing
from cyborg.conductor import bind_programming
from cyborg.conductor import history
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import history as history_queries
from cyborg.db.queries import host_locks

LOG = logging.getLogger(__name__)
ProgramResult = vocabulary.ProgramResult
# The lock outlasts the agent call by this many seconds (the Glance check
# before it, the record after it).
LOCK_MARGIN = 60
# The only device type whose deployables (its regions) take a bitstream.
PROGRAMMABLE_TYPE = bind_programming.PROGRAMMABLE_TYPE


class BadGateway(exception.CyborgException):
    """A service cyborg relies on (an agent, its driver) failed: 502.

    ``suspect`` is True when the region may hold something else than
    before and than asked (it is then marked degraded)."""

    msg_fmt = 'Bad gateway: %(reason)s'
    code = http.HTTPStatus.BAD_GATEWAY
    suspect = False

    @property
    def health_reason(self):
        """Why the region is degraded, when it is (``suspect``)."""
        return self.kwargs.get('reason') or str(self)


class ProgrammingFailed(BadGateway):
    msg_fmt = ('Programming deployable %(deployable)s with image %(image)s '
               'failed on host %(host)s: %(reason)s')


class AgentTimeout(BadGateway):
    msg_fmt = ('The agent of host %(host)s did not answer within %(timeout)s '
               'seconds while programming deployable %(deployable)s; the '
               'region may or may not hold image %(image)s.')
    code = http.HTTPStatus.GATEWAY_TIMEOUT
    suspect = True

    @property
    def health_reason(self):
        return ('the agent did not answer within %(timeout)s seconds while '
                'programming image %(image)s' % self.kwargs)


class DeployableNotProgrammable(exception.NotFound):
    msg_fmt = ('Host %(host)s cannot program deployable %(deployable)s: '
               '%(reason)s')


class BitstreamRejected(exception.Invalid):
    msg_fmt = ('Host %(host)s refused image %(image)s for deployable '
               '%(deployable)s: %(reason)s')


class DeviceTypeNotProgrammable(exception.Invalid):
    msg_fmt = ('Deployable %(deployable)s is on a %(device_type)s device: '
               'only FPGA regions can be programmed.')


class ImageNotUsable(exception.Invalid):
    msg_fmt = 'Image %(image)s cannot be used: %(reason)s'


class DeployableInUse(exception.Conflict):
    msg_fmt = ('Deployable %(deployable)s is in use by an accelerator '
               'request and cannot be programmed.')


class AgentsTooOld(exception.Conflict):
    msg_fmt = ('Deployable %(deployable)s cannot be programmed: agents are '
               'pinned to RPC version %(version_cap)s ([upgrade_levels] '
               'agent), older than programming.')


class DeployableBeingProgrammed(exception.Conflict):
    msg_fmt = 'Deployable %(deployable)s is being programmed already.'


class ProgrammingLockLost(exception.Conflict):
    msg_fmt = ('Deployable %(deployable)s was programmed with image '
               '%(image)s, but its programming lock ran out ([conductor] '
               'program_timeout) and another request took it; its '
               'bitstream_id was not recorded.')


# A failure code of the agent and the exception telling it.
_FAILURES = {
    ProgramResult.INVALID_DEPLOYABLE: DeployableNotProgrammable,
    ProgramResult.INVALID_BITSTREAM: BitstreamRejected,
}


@dataclasses.dataclass(frozen=True)
class ProgramSettings:
    """What programming needs of the configuration."""

    # [conductor] program_timeout: the agent call's limit; the lock lasts
    # LOCK_MARGIN longer.
    timeout: int

    @classmethod
    def from_conf(cls, conf):
        return cls(timeout=conf.conductor.program_timeout)


@dataclasses.dataclass(frozen=True)
class _Target:
    """The deployable being programmed, its device and the lock's owner."""

    deployable: object  # objects.Deployable
    device: object  # objects.Device
    owner: str

    @property
    def names(self):
        """Format arguments of the exceptions."""
        return {'deployable': self.deployable.uuid,
                'host': self.device.hostname}


class Programmer:
    """Programs deployables: checks, the agent call, the record.

    ``agents`` is an ``AgentAPI``; ``glance_for(context)`` returns a
    ``GlanceClient`` making its calls with ``context``'s token.
    """

    def __init__(self, host, settings, agents, glance_for,
                 placement_for=None):
        """``placement_for()``, when given, returns the PlacementClient
        the providers of a region marked degraded are synced with."""
        self.host = host
        self.settings = settings
        self.agents = agents
        self.glance_for = glance_for
        self.placement_for = placement_for

    def program(self, context, deployable_uuid, image_id, row_options=None):
        """Program ``image_id`` into the deployable; return ``answer``'s
        answer (the Deployable without ``row_options``).

        :raises: ResourceNotFound, DeviceTypeNotProgrammable (400),
            DeployableInUse, DeployableBeingProgrammed,
            ImageNotUsable, InvalidBitstream, BitstreamMismatch, and on the
            host's failure ProgrammingFailed, AgentTimeout,
            DeployableNotProgrammable or BitstreamRejected
        """
        target = self._lock(context, deployable_uuid)
        recorded = False
        try:
            bitstream, image_hash = self._checked_bitstream(
                context, image_id, target)
            entry = functools.partial(
                history.of_program, context, target.deployable,
                target.device, image_id, image_hash=image_hash)
            try:
                loaded = self._program_on_host(context, target, bitstream)
            except BadGateway as failure:
                # The host may have loaded part or all of the image (its
                # agent died, or its driver failed midway): what the region
                # holds is unknown, so a bind asking for its previous image
                # must program it again.
                recorded = _finish(context, target, None, entry(
                    timeutils.utcnow(), failure=failure),
                    degraded=failure.health_reason if failure.suspect
                    else None)
                if failure.suspect:
                    self._sync_placement(context, target)
                raise
            except (DeployableNotProgrammable, BitstreamRejected) as failure:
                # Refused by the host: the region holds what it held.
                recorded = _release(context, target, entry(
                    timeutils.utcnow(), failure=failure))
                raise
            recorded = self._record(context, target,
                                    _reported_image(loaded, image_id),
                                    entry(timeutils.utcnow()))
        finally:
            if not recorded:
                deployable_queries.release_programming(
                    context, deployable_uuid, target.owner)
        return answer(context, deployable_uuid, row_options)

    def _lock(self, context, deployable_uuid):
        """Load the deployable and its device and take the programming lock."""
        deployable = objects.Deployable.get_by_uuid(context, deployable_uuid)
        device = objects.Device.get_by_id(context, deployable.device_id)
        if device.type != PROGRAMMABLE_TYPE:
            # Before the lock, Glance and the agent: no bitstream fits a
            # GPU, and its driver has nothing to load one with.
            raise DeviceTypeNotProgrammable(deployable=deployable_uuid,
                                            device_type=device.type)
        owner = '%s/%d/%s' % (self.host, os.getpid(), uuid.uuid4().hex[:12])
        now = timeutils.utcnow()
        expires_at = now + datetime.timedelta(
            seconds=self.settings.timeout + LOCK_MARGIN)
        answer = deployable_queries.start_programming(
            context, deployable_uuid, owner, now, expires_at)
        if answer == deployable_queries.HELD_BY_ARQ:
            raise DeployableInUse(deployable=deployable_uuid)
        if answer != deployable_queries.LOCKED:
            raise DeployableBeingProgrammed(deployable=deployable_uuid)
        return _Target(deployable, device, owner)

    def _checked_bitstream(self, context, image_id, target):
        """The Bitstream of ``image_id`` once it is known to fit ``target``,
        and the image's hash (Glance's ``os_hash_value``, None when it has
        none).

        :raises: ImageNotUsable, InvalidBitstream, BitstreamMismatch
        """
        try:
            image = self.glance_for(context).get_image(image_id)
        except exception.ImageNotFound:
            raise ImageNotUsable(
                image=image_id, reason='Glance has no such image, or it is '
                'not visible to the caller.') from None
        bitstream = bitstreams.Bitstream.from_image(image)
        device_info = bitstream_fit.DeviceInfo.from_rows(
            target.device, target.deployable,
            target.deployable.attributes_list,
            vendor_names=vocabulary.VENDOR_NAMES)
        bitstream_fit.check_fits(bitstream, device_info)
        return bitstream, image.get('os_hash_value') or None

    def _program_on_host(self, context, target, bitstream):
        """Have the device's agent program ``bitstream``; return what the
        region reported holding (the answer's ``loaded``, None from an
        agent that does not say) or raise on failure."""
        names = dict(target.names, image=bitstream.image_id)
        try:
            answer = self.agents.program(
                context, target.device.hostname,
                driver_name=target.deployable.driver_name,
                deployable_name=target.deployable.name,
                image_id=bitstream.image_id, timeout=self.settings.timeout)
        except oslo_messaging.MessagingTimeout:
            raise AgentTimeout(timeout=self.settings.timeout,
                               **names) from None
        except oslo_messaging.RPCVersionCapError:
            # Refused before anything was sent.
            raise AgentsTooOld(deployable=target.deployable.uuid,
                               version_cap=self.agents.version_cap) from None
        code = _result_code(answer.get('code'))
        reason = answer.get('message') or code.name
        LOG.info('Programming deployable %(deployable)s with image '
                 '%(image)s on %(host)s: %(code)s, %(reason)s',
                 dict(names, code=code.name, reason=reason))
        if code is not ProgramResult.SUCCESS:
            failure = _FAILURES.get(code, ProgrammingFailed)(reason=reason,
                                                              **names)
            failure.suspect = bool(answer.get('suspect'))
            raise failure
        return answer.get('loaded')

    def _sync_placement(self, context, target):
        """Bring the host's providers in step with a region just marked
        degraded (its inventory reserved); a failure is logged, and the
        next report of the host syncs them."""
        if self.placement_for is None:
            return
        try:
            placement_sync.sync_host(context, self.placement_for(),
                                     target.device.hostname)
        except Exception:
            LOG.exception('Placement could not be told that deployable %s '
                          'is degraded; the next report of host %s tells it',
                          target.deployable.uuid, target.device.hostname)

    def _record(self, context, target, image_id, entry):
        """Record ``image_id`` as the deployable's bitstream, free the lock
        and append ``entry`` to the history, in one transaction.

        :raises: ProgrammingLockLost when the lock went to another request
            (the history records the program as failed for that reason)
        """
        lost = ProgrammingLockLost(deployable=target.deployable.uuid,
                                   image=image_id)
        if not _finish(context, target, image_id, entry, lost=lost):
            raise lost
        return True


@db_api.writer
def _finish(context, target, image_id, entry, lost=None, degraded=None):
    """``finish_programming`` with ``image_id`` and the history ``entry``
    in one transaction; whether the lock was still held. When it was not,
    the entry is recorded as failed for ``lost`` (when given). With
    ``degraded`` (the reason) the region is marked degraded."""
    done = deployable_queries.finish_programming(
        context, target.deployable.uuid, target.owner, image_id)
    if done:
        # The host's next report is weighed against the image recorded.
        host_locks.forget(context, target.device.hostname)
    if not done and lost is not None:
        entry = dict(entry, outcome=history.OUTCOMES.FAILED,
                     reason=str(lost))
    history_queries.append(context, [entry])
    if degraded is not None:
        bind_finishing.mark_degraded(
            context, {target.deployable.id: degraded}, entry['created_at'])
    return done


def _reported_image(loaded, image_id):
    """The image to record for a region that reported ``loaded`` (the
    agent's dict, or None) once ``image_id`` was loaded and verified: the
    image id it reports, else the one asked (its driver confirmed the
    function, or cannot read regions back)."""
    return (loaded or {}).get('bitstream_id') or image_id


@db_api.writer
def _release(context, target, entry):
    """Give the lock back unchanged and append the history ``entry``, in
    one transaction; True (the lock needs no other release)."""
    deployable_queries.release_programming(
        context, target.deployable.uuid, target.owner)
    history_queries.append(context, [entry])
    return True


def answer(context, deployable_uuid, row_options=None):
    """What a program call answers, read once the deployable is recorded.

    Without ``row_options`` (the call of RPC 1.3): the Deployable. With
    them (RPC 1.5: the ``Deployable.get_row`` keywords of what the caller's
    microversion shows) a dict holding the Deployable as ``deployable``
    and, when an option is set, as ``shown`` what the object lacks of that
    row: ``attributes_list`` (the row's JSON text) and, with
    ``tree_uuids``, ``parent_uuid`` and ``root_uuid``.
    """
    deployable = objects.Deployable.get_by_uuid(context, deployable_uuid)
    if row_options is None:
        return deployable
    result = {'deployable': deployable}
    if any(row_options.values()):
        row, attributes_list = objects.Deployable.get_row(
            context, deployable_uuid, **row_options)
        shown = {'attributes_list': attributes_list}
        if row_options.get('tree_uuids'):
            shown.update(parent_uuid=row.parent_uuid,
                         root_uuid=row.root_uuid)
        result['shown'] = shown
    return result


def _result_code(value):
    """The ProgramResult of an agent's answer; FAILED when it is unknown."""
    try:
        return ProgramResult(value)
    except ValueError:
        return ProgramResult.FAILED

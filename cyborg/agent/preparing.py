"""The agent's side of a bind and of its undoing: ``prepare_arqs`` and
``release_arqs`` (``AgentManager``'s endpoints hand off to ``Preparer``).

For each ARQ it finds the named attach handle in the inventory of the last
report, downloads the bitstream to load first if any (as a program call
does) and calls the driver's ``prepare`` or ``release``, the ARQs of a
region being programmed one after the other, the one carrying the
bitstream first. ``Holds`` remembers per handle the last hold prepared or
released, so that a repeated prepare is answered from what was done and a
late release never undoes the prepare of a newer bind.
"""

import collections
import contextlib
import dataclasses
import datetime
import json
import logging
import threading
import time

from cyborg.agent import programming
from cyborg.agent.drivers import base as drivers_base

LOG = logging.getLogger(__name__)

# Answers come this many seconds before the caller stops waiting, but the
# work runs at least MIN_SECONDS.
ANSWER_MARGIN = 1
MIN_SECONDS = 0.5


@dataclasses.dataclass(frozen=True)
class Found:
    """An attach handle of the inventory and the driver that reported it."""

    device: object
    deployable: object
    handle: object
    driver: object
    driver_name: str


@dataclasses.dataclass(frozen=True, order=True)
class Hold:
    """One ARQ's holding of an attach handle: when it took it, and which."""

    taken_at: datetime.datetime
    arq_uuid: str

    @classmethod
    def of(cls, value):
        """The Hold of the ``hold`` dict the conductor sends, or None."""
        if not value:
            return None
        return cls(datetime.datetime.fromisoformat(value['taken_at']),
                   value['arq'])


@dataclasses.dataclass(frozen=True)
class _Last:
    """The last hold of a handle: released or not, and the result its
    prepare ended in (None: not prepared, or not finished)."""

    hold: Hold
    released: bool = False
    result: dict = None


class Holds:
    """The last hold each attach handle was prepared or released for, and
    what its prepare answered.

    In memory: an agent that restarts knows none, and then releases what
    it is asked to (nothing newer was prepared since it started) and
    prepares again what it is asked to.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._turns = {}
        self._last = {}

    @contextlib.contextmanager
    def turn(self, key):
        """Hold the turn of handle ``key``: its prepares and releases take
        turns."""
        with self._lock:
            lock = self._turns.setdefault(key, threading.Lock())
        with lock:
            yield

    def start_prepare(self, key, hold):
        """Record that ``hold`` is being prepared (within the turn).

        Returns a copy of the result an earlier prepare of ``hold`` ended
        in, to be answered again instead of preparing, or None.

        :raises: PrepareFailed when that hold was released already or a
            later one was prepared
        """
        if hold is None:
            return None
        last = self._last.get(key)
        if last is not None and last.hold == hold and last.released:
            raise drivers_base.PrepareFailed(
                'the ARQ let go of its attach handle (unbound or deleted) '
                'before the agent prepared it')
        if last is not None and last.hold > hold:
            raise drivers_base.PrepareFailed(
                'a later bind of ARQ %s took the attach handle'
                % last.hold.arq_uuid)
        if last is not None and last.hold == hold and last.result is not None:
            return dict(last.result)
        self._last[key] = _Last(hold)
        return None

    def prepared(self, key, hold, result):
        """Record the result preparing ``hold`` ended in (within the
        turn), answered again to a repeated prepare of it."""
        if hold is not None:
            self._last[key] = _Last(hold, result=dict(result))

    def is_current(self, key, hold):
        """Whether releasing ``hold`` undoes nothing newer (in the turn)."""
        last = self._last.get(key)
        return hold is None or last is None or hold >= last.hold

    def released(self, key, hold):
        """Record that ``hold`` was released (within the turn)."""
        if hold is not None:
            self._last[key] = _Last(hold, released=True)


class Preparer:
    """Prepares and releases attach handles with the agent's drivers.

    ``agent`` is the AgentManager whose ``host``, ``drivers`` (by name),
    cached inventory (``deployables``), ``glance`` client (the agent's
    own credentials) and ``bitstream_cache`` are used, read at each call;
    its ``report_soon()`` is called once a bind has loaded a bitstream.
    """

    def __init__(self, agent):
        self._agent = agent
        self.holds = Holds()

    @property
    def host(self):
        return self._agent.host

    @property
    def drivers(self):
        return self._agent.drivers

    @property
    def deployables(self):
        return self._agent.deployables

    def on_programmed(self):
        self._agent.report_soon()

    def prepare(self, arqs, timeout=None, max_bytes=None):
        """Prepare the ARQs' handles; ``{uuid: {'prepared', 'reason'}}``.

        With ``timeout`` (how long the caller waits) the answer comes a
        little before it, and an ARQ still being prepared then fails as
        ``pending``: the caller may ask again, and that prepare waits for
        this one. ``max_bytes`` is the largest bitstream downloaded.
        """
        answers = _Answers()
        rediscovered = set()
        found = {}
        for arq in arqs:
            try:
                found[arq['uuid']] = self.find(arq, rediscovered)
            except Exception as error:
                answers.record(arq['uuid'], _failed(str(error)))
        threads = [_start(self._prepare_group, 'prepare-' + group[0]['uuid'],
                          group, found, answers, max_bytes)
                   for group in _groups([arq for arq in arqs
                                         if arq['uuid'] in found])]
        _join_until(threads, timeout)
        return answers.final([arq['uuid'] for arq in arqs], dict(
            _failed('still preparing after %s s' % timeout), pending=True))

    def release(self, handles, timeout=None):
        """Release each handle; a list of ``{'released', 'stale', 'reason'}``
        in the order of ``handles``."""
        answers = _Answers()
        threads = [_start(self._release_one, 'release-%d' % index, index,
                          handle, answers)
                   for index, handle in enumerate(handles)]
        _join_until(threads, timeout)
        final = answers.final(range(len(handles)), {
            'released': False, 'stale': False,
            'reason': 'still releasing after %s s' % timeout})
        return [final[index] for index in range(len(handles))]

    def find(self, arq, rediscovered):
        """The Found of the handle ``arq`` names, from the inventory.

        The cached inventory is searched first; then each driver concerned
        not yet in ``rediscovered`` (the drivers that discovered during
        this call) discovers, refreshing the cache, and joins it.

        :raises: PrepareFailed when no driver reports that handle now; what
            a driver's discover() raises
        """
        names = ([arq['driver_name']]
                 if arq.get('driver_name') in self.drivers
                 else list(self.drivers))
        for name in names:
            found = _attach_handle_in(self.deployables.get(name), arq)
            if found is not None:
                return Found(*found, self.drivers[name], name)
        for name in names:
            if name in rediscovered:
                continue
            index = self.deployables.replace(name,
                                             self.drivers[name].discover())
            rediscovered.add(name)
            found = _attach_handle_in(index, arq)
            if found is not None:
                return Found(*found, self.drivers[name], name)
        raise drivers_base.PrepareFailed(
            'host %s no longer reports attach handle %s %s of deployable %s'
            % (self.host, arq['attach_type'], canonical(arq['attach_info']),
               arq['deployable_name']))

    def _prepare_group(self, group, found, answers, max_bytes):
        """Prepare ``group`` in order; after the first, only if it loaded
        its bitstream, with the handles found again."""
        first = group[0]
        result = self._prepare_one(first, found[first['uuid']], max_bytes)
        answers.record(first['uuid'], result)
        for arq in group[1:]:
            if not result['prepared'] and not result.get('loaded'):
                answers.record(arq['uuid'], _failed(
                    'deployable %s was not programmed: %s'
                    % (arq['deployable_name'], result['reason'])))
                continue
            try:
                again = self.find(arq, set())
            except Exception as error:
                answers.record(arq['uuid'], _failed(
                    'after programming: %s' % error))
                continue
            answers.record(arq['uuid'], self._prepare_one(arq, again))

    def _prepare_one(self, arq, found, max_bytes=None):
        """Prepare one handle (loading its bitstream first), unless its
        hold was prepared already; the result.

        A result whose handle is gone although the bitstream was loaded
        says so (``loaded``, which stays out of the RPC answer).
        """
        key = _handle_key(arq)
        with self.holds.turn(key):
            try:
                hold = Hold.of(arq.get('hold'))
                earlier = self.holds.start_prepare(key, hold)
            except drivers_base.PrepareFailed as error:
                return _failed(str(error))
            except Exception as error:
                LOG.exception('The hold of ARQ %s is unusable', arq['uuid'])
                return _failed('%s: %s' % (type(error).__name__, error))
            if earlier is not None:
                LOG.info('Attach handle %s was prepared for ARQ %s '
                         'already: answering again', key, arq['uuid'])
                return earlier
            result = self._run_prepare(arq, found, max_bytes)
            self.holds.prepared(key, hold, result)
            return result

    def _run_prepare(self, arq, found, max_bytes):
        """Have the driver prepare the handle (within its turn); the
        result."""
        readback = None
        try:
            if arq.get('bitstream_id'):
                readback = self._program_and_prepare(arq, found, max_bytes)
            else:
                found.driver.prepare(
                    found.device, found.deployable, found.handle,
                    arq.get('request_group') or {},
                    bitstream_path=None, bitstream=None)
        except _HandleGone as error:
            return dict(_failed(str(error)), loaded=True)
        except drivers_base.ProgramFailed as error:
            # A failed load may have left anything in the region (the
            # conductor marks it degraded); a refusal (invalid region or
            # bitstream) left it as it was.
            failed = _failed(str(error))
            if error.code is programming.ProgramResult.FAILED:
                failed['suspect'] = True
            return failed
        except drivers_base.PrepareFailed as error:
            return _failed(str(error))
        except programming.DownloadFailed as error:
            return _failed('image %s cannot be loaded: %s'
                           % (arq['bitstream_id'], error.message))
        except Exception as error:
            LOG.exception('Preparing the attach handle of ARQ %s failed',
                          arq['uuid'])
            return _failed('%s: %s' % (type(error).__name__, error))
        if readback is None:
            return {'prepared': True, 'reason': None}
        # What the region reported holding: the conductor records it.
        return {'prepared': True, 'reason': None,
                'readback': readback.as_dict()}

    def _program_and_prepare(self, arq, found, max_bytes):
        """Download the ARQ's bitstream, have the driver load it and
        prepare the handle, and read back what the region holds (which
        must be that image); the handle must still exist afterwards.
        Returns the region's Readback (None: its driver cannot tell).

        :raises: PrepareFailed (ProgramFailed when the image was not
            loaded or the region does not show it), DownloadFailed
        """
        image_id = arq['bitstream_id']
        with programming.downloaded(self._agent.glance, image_id,
                                    max_bytes,
                                    self._agent.bitstream_cache) as loaded:
            path, bitstream = loaded
            # Loading may take minutes: say when it starts.
            LOG.info('Loading image %s into deployable %s for ARQ %s',
                     image_id, arq['deployable_name'], arq['uuid'])
            try:
                with self._agent.report_gate.programming():
                    found.driver.prepare(
                        found.device, found.deployable, found.handle,
                        arq.get('request_group') or {},
                        bitstream_path=path, bitstream=bitstream)
                    readback = programming.verify(
                        found.driver, found.device.controlpath_id,
                        arq['deployable_name'], image_id, bitstream)
            except programming.VerificationFailed as error:
                self._programmed(found)
                raise drivers_base.ProgramFailed(
                    'deployable %s: %s' % (arq['deployable_name'],
                                           error)) from None
            except drivers_base.PrepareFailed as error:
                message = programming.hide_path(str(error), path, image_id)
                if isinstance(error, drivers_base.ProgramFailed):
                    raise drivers_base.ProgramFailed(
                        message, error.code) from None
                raise drivers_base.PrepareFailed(message) from None
        LOG.info('Loaded image %s into deployable %s for ARQ %s', image_id,
                 arq['deployable_name'], arq['uuid'])
        self._programmed(found)
        if _attach_handle_in(self.deployables.get(found.driver_name),
                             arq) is None:
            raise _HandleGone(
                'image %s changed the functions of deployable %s: it no '
                'longer has attach handle %s %s' % (
                    image_id, arq['deployable_name'], arq['attach_type'],
                    canonical(arq['attach_info'])))
        return readback

    def _programmed(self, found):
        """Discover again and report soon: a region changed."""
        programming.refresh(self.deployables, found.driver_name,
                            found.driver)
        self.on_programmed()

    def _release_one(self, index, item, answers):
        """Release one handle, unless a newer hold was prepared since."""
        key = _handle_key(item)
        hold = Hold.of(item.get('hold'))
        try:
            found = self.find(item, set())
        except drivers_base.PrepareFailed:
            answers.record(index, {'released': True, 'stale': False,
                                   'reason': 'not reported by this host'})
            return
        except Exception as error:
            answers.record(index, _not_released(error))
            return
        with self.holds.turn(key):
            if not self.holds.is_current(key, hold):
                LOG.info('Release of %s for ARQ %s ignored: the handle was '
                         'prepared for a later bind since', key,
                         hold.arq_uuid)
                answers.record(index, {
                    'released': False, 'stale': True,
                    'reason': 'prepared for a later bind since'})
                return
            try:
                found.driver.release(found.device, found.deployable,
                                     found.handle)
            except Exception as error:
                if not isinstance(error, drivers_base.ReleaseFailed):
                    LOG.exception('Releasing %s failed', key)
                answers.record(index, _not_released(error))
                return
            self.holds.released(key, hold)
        answers.record(index, {'released': True, 'stale': False,
                               'reason': None})


class _HandleGone(drivers_base.PrepareFailed):
    """The bitstream was loaded, and the handle is no longer reported."""


class _Answers:
    """The answer of one call, filled by its threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._results = {}

    def record(self, key, result):
        """Keep ``result`` for ``key`` unless it has one already."""
        with self._lock:
            self._results.setdefault(key, result)

    def final(self, keys, missing):
        """The answer now: ``keys`` without a result get ``missing``.

        Work finishing later records nothing any more.
        """
        with self._lock:
            for key in keys:
                self._results.setdefault(key, dict(missing))
            return {key: {name: value for name, value in result.items()
                          if name != 'loaded'}
                    for key, result in self._results.items()}


def _failed(reason):
    return {'prepared': False, 'reason': reason}


def _not_released(error):
    return {'released': False, 'stale': False,
            'reason': '%s: %s' % (type(error).__name__, error)}


def _groups(arqs):
    """The ARQs in groups prepared one after the other: those of a
    deployable being programmed together (the one carrying the bitstream
    first), every other ARQ alone."""
    programmed = {arq['deployable_name'] for arq in arqs
                  if arq.get('bitstream_id')}
    together = collections.defaultdict(list)
    groups = []
    for arq in arqs:
        name = arq['deployable_name']
        if name not in programmed:
            groups.append([arq])
            continue
        if not together[name]:
            groups.append(together[name])
        together[name].append(arq)
    for group in together.values():
        group.sort(key=lambda arq: not arq.get('bitstream_id'))
    return groups


def _start(target, name, *args):
    thread = threading.Thread(target=target, args=args, daemon=True,
                              name=name)
    thread.start()
    return thread


def _join_until(threads, timeout):
    """Wait for ``threads``; with ``timeout``, until a little before it."""
    deadline = None
    if timeout:
        deadline = time.monotonic() + max(MIN_SECONDS,
                                          timeout - ANSWER_MARGIN)
    for thread in threads:
        thread.join(None if deadline is None
                    else max(0, deadline - time.monotonic()))


def _handle_key(arq):
    """What names an attach handle on this host: deployable, type, info."""
    return '%s %s %s' % (arq['deployable_name'], arq['attach_type'],
                         canonical(arq['attach_info']))


def _attach_handle_in(index, arq):
    """(device, deployable, handle) ``arq`` names in ``index``, or None.

    ``index`` is an entry of DeployableCache (None: no entry).
    """
    found = (index or {}).get(arq['deployable_name'])
    if found is None:
        return None
    device, deployable = found
    wanted = (arq['attach_type'], canonical(arq['attach_info']))
    for handle in deployable.attach_handles:
        if (handle.attach_type, canonical(handle.attach_info)) == wanted:
            return device, deployable, handle
    return None


def canonical(info):
    """An attach info dict as one canonical JSON text."""
    return json.dumps(info, sort_keys=True, separators=(',', ':'))

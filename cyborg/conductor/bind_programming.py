"""Programming an FPGA region as part of a bind (and so of an os-acc plug).

An ARQ whose profile group names ``accel:bitstream_id`` or
``accel:function_id`` is set aside by the first claim; ``resolve`` asks
Glance which image each request means on each region, and the second
claim keeps one image per region (``choose``) and takes the region's
programming lock unless another bind holds it (``refused_regions``).
``outcomes`` says what each region holds once the agents have answered.
"""

import dataclasses
import datetime
import logging

from cyborg import bitstream as bitstreams
from cyborg import bitstream_fit
from cyborg import exception
from cyborg.common import vocabulary

LOG = logging.getLogger(__name__)

BITSTREAM_KEY, FUNCTION_KEY = vocabulary.PROGRAMMING_KEYS
# The only device type whose deployables (its regions) take a bitstream.
PROGRAMMABLE_TYPE = 'FPGA'
# The outcome of a Decision whose ARQ the agent prepared.
PREPARED = 'prepared'
# A bind's programming lock outlasts its bind_timeout by this many seconds,
# as a program request's lock outlasts its program_timeout.
LOCK_MARGIN = datetime.timedelta(seconds=60)


@dataclasses.dataclass(frozen=True)
class Request:
    """What an ARQ's group asks to be loaded: an image, a function or both.

    A uuid is kept dashed and lower-case when it is one, as given otherwise.
    """

    image_id: str | None = None
    function_id: str | None = None


def request_of(group):
    """The Request of a device profile group (a dict), or None."""
    values = [group.get(key) for key in (BITSTREAM_KEY, FUNCTION_KEY)]
    values = [value.strip() if isinstance(value, str) and value.strip()
              else None for value in values]
    if values == [None, None]:
        return None
    return Request(*[_uuid_or_text(value) for value in values])


def _keys_of(request):
    """The programming keys ``request`` was given by."""
    return [key for key, value in ((BITSTREAM_KEY, request.image_id),
                                   (FUNCTION_KEY, request.function_id))
            if value is not None]


def _uuid_or_text(value):
    if value is None:
        return None
    return bitstreams.normalize_uuid(value) or value


@dataclasses.dataclass(frozen=True)
class Region:
    """The FPGA region of a pending ARQ, with what a fit is checked on:
    the deployable's and its device's columns ``DeviceInfo.from_rows``
    reads, and the deployable's attributes."""

    deployable_id: int
    name: str
    vendor: str
    model: str
    vendor_board_info: str | None
    # The device's type: only an FPGA's regions can be programmed.
    device_type: str = PROGRAMMABLE_TYPE
    attributes: dict = dataclasses.field(default_factory=dict, hash=False)

    @classmethod
    def of_row(cls, row):
        """The Region of a ``leased_arqs`` row (its attributes not yet)."""
        return cls(deployable_id=row['deployable_row_id'],
                   name=row['deployable_name'], vendor=row['device_vendor'],
                   model=row['device_model'],
                   vendor_board_info=row['device_vendor_board_info'],
                   device_type=row['device_type'])

    def device_info(self):
        """The ``cyborg.bitstream_fit.DeviceInfo`` a bitstream must fit."""
        # A Region has the columns of both rows from_rows reads.
        return bitstream_fit.DeviceInfo.from_rows(
            self, self, self.attributes,
            vendor_names=vocabulary.VENDOR_NAMES)


@dataclasses.dataclass(frozen=True)
class Pending:
    """An ARQ the first claim set aside: its request and its region."""

    arq_id: int
    arq_uuid: str
    request: Request
    region: Region


@dataclasses.dataclass(frozen=True)
class Target:
    """What a request means on a region: the image to load, or why none."""

    image_id: str | None = None
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class Resolved:
    """``resolve``'s answers for the second claim: ``targets`` by
    ``(deployable id, Request)``, and the ids of every ARQ of the batch
    (they do not count as holding a region against each other)."""

    targets: dict
    batch_arq_ids: frozenset


def resolve(glance, pending):
    """``{(deployable id, Request): Target}`` of the ``pending`` ARQs.

    ``glance`` is a GlanceClient with the conductor's credentials, or None
    (every request then fails). Glance is asked once per image id and once
    per function id spelling, whatever the number of ARQs and regions.
    """
    images = _Images(glance)
    targets = {}
    for item in pending:
        key = (item.region.deployable_id, item.request)
        if key not in targets:
            targets[key] = _target(images, item.request, item.region)
            LOG.debug('ARQ %s: %s on %s means %s', item.arq_uuid,
                      item.request, item.region.name, targets[key])
    return targets


class _Unusable(Exception):
    """Glance cannot give what a request names; the message says why."""


class _Images:
    """Glance's answers, each asked once."""

    def __init__(self, glance):
        self.glance = glance
        self._bitstreams = {}
        self._providers = {}

    def bitstream(self, image_id):
        """The Bitstream of image ``image_id``.

        :raises: _Unusable
        """
        if image_id not in self._bitstreams:
            self._bitstreams[image_id] = self._ask(
                self._load_bitstream, image_id)
        return _raise_or_return(self._bitstreams[image_id])

    def providers(self, function_id):
        """The valid FPGA bitstreams whose ``function_uuid`` is
        ``function_id`` (a uuid), by image id, asking Glance for each of
        its ``bitstream.uuid_spellings``.

        :raises: _Unusable
        """
        if function_id not in self._providers:
            self._providers[function_id] = self._ask(
                self._load_providers, function_id)
        return _raise_or_return(self._providers[function_id])

    def _ask(self, load, value):
        if self.glance is None:
            return _Unusable('this conductor has no Glance client')
        try:
            return load(value)
        except _Unusable as error:
            return error
        except exception.CyborgException as error:
            return _Unusable('Glance could not be asked: %s' % error.message)

    def _load_bitstream(self, image_id):
        try:
            image = self.glance.get_image(image_id)
        except exception.ImageNotFound:
            raise _Unusable('%s names image %s, which Glance does not have '
                            '(or does not show cyborg)'
                            % (BITSTREAM_KEY, image_id)) from None
        try:
            return bitstreams.Bitstream.from_image(image)
        except bitstreams.InvalidBitstream as error:
            raise _Unusable(error.message) from None

    def _load_providers(self, function_id):
        found = {}
        for spelling in bitstreams.uuid_spellings(function_id):
            for image in self.glance.list_images(
                    {'tag': bitstreams.TAG, 'function_uuid': spelling}):
                try:
                    found[image['id']] = bitstreams.Bitstream.from_image(image)
                except bitstreams.InvalidBitstream as error:
                    LOG.warning('Image %s provides function %s but is not a '
                                'valid bitstream: %s', image.get('id'),
                                function_id, error)
        return found


def _raise_or_return(value):
    if isinstance(value, _Unusable):
        raise value
    return value


def _target(images, request, region):
    """The Target of ``request`` on ``region``."""
    if region.device_type != PROGRAMMABLE_TYPE:
        # Glance is not asked: no bitstream loads into anything else.
        return Target(reason='deployable %s is on a %s device: only FPGA '
                             'regions can be programmed (the profile names '
                             '%s)' % (region.name, region.device_type,
                                      ' and '.join(_keys_of(request))))
    try:
        if request.image_id is not None:
            return Target(image_id=_image_target(images, request, region))
        return Target(image_id=_function_target(images, request, region))
    except _Unusable as error:
        return Target(reason=str(error))


def _image_target(images, request, region):
    """The image ``accel:bitstream_id`` names, checked; raises _Unusable."""
    bitstream = images.bitstream(request.image_id)
    if request.function_id is not None and \
            bitstream.function_uuid != request.function_id:
        raise _Unusable('image %s provides function %s, not the %s %s'
                        % (bitstream.image_id, bitstream.function_uuid,
                           FUNCTION_KEY, request.function_id))
    try:
        bitstream_fit.check_fits(bitstream, region.device_info())
    except bitstreams.BitstreamMismatch as error:
        raise _Unusable(error.message) from None
    return bitstream.image_id


def _function_target(images, request, region):
    """The one image providing the function that fits; raises _Unusable."""
    if bitstreams.normalize_uuid(request.function_id) is None:
        raise _Unusable('%s %r is not a function UUID (the function_uuid '
                        'of bitstream images)' % (FUNCTION_KEY,
                                                  request.function_id))
    providers = images.providers(request.function_id)
    fitting = sorted(image_id for image_id, bitstream in providers.items()
                     if _fits(bitstream, region))
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        others = sorted(providers)
        raise _Unusable('no bitstream in Glance provides function %s for '
                        'deployable %s%s' % (
                            request.function_id, region.name,
                            ' (images providing it that do not fit: %s)'
                            % ', '.join(others) if others else ''))
    raise _Unusable('several bitstreams in Glance provide function %s for '
                    'deployable %s: %s; name one with %s'
                    % (request.function_id, region.name, ', '.join(fitting),
                       BITSTREAM_KEY))


def _fits(bitstream, region):
    try:
        bitstream_fit.check_fits(bitstream, region.device_info())
    except bitstreams.BitstreamMismatch:
        return False
    return True


# -- Within the second claim (cyborg.conductor.bind_transactions) -------------

@dataclasses.dataclass
class Programs:
    """What the second claim decided: per region, the image the batch
    wants there (and its first ARQ), the images to load and the ARQs
    waiting for each load, as ``(row, Work)``."""

    wanted: dict = dataclasses.field(default_factory=dict)
    images: dict = dataclasses.field(default_factory=dict)
    waiting: dict = dataclasses.field(default_factory=dict)


def choose(programs, row, item, request, resolved):
    """Decide how the ARQ ``row`` (its Work ``item``) gets its request.

    Returns None when it may go on (its region holds the image, or is to
    be programmed with it, ``item.bitstream_id`` set on the first ARQ of
    that region), else the reason it fails. Raises KeyError when its
    request was not resolved (the ARQ changed meanwhile).
    """
    region_id = row['deployable_row_id']
    target = resolved.targets[(region_id, request)]
    if target.reason is not None:
        return target.reason
    image_id, first = programs.wanted.setdefault(
        region_id, (target.image_id, row['uuid']))
    if image_id != target.image_id:
        return ('ARQ %s of this bind has deployable %s hold image %s; it '
                'cannot hold image %s too' % (first, row['deployable_name'],
                                              image_id, target.image_id))
    if row['deployable_bitstream_id'] == target.image_id:
        return None
    if region_id not in programs.images:
        programs.images[region_id] = target.image_id
        item.bitstream_id = target.image_id
    programs.waiting.setdefault(region_id, []).append((row, item))
    return None


def refused_regions(programs, holders):
    """Give up the regions ``holders`` (``holders_of``) shows other ARQs
    holding; return ``[(row, Work, reason)]`` of the ARQs that fail."""
    refused = []
    for region_id, arq_uuids in sorted(holders.items()):
        image_id = programs.images.pop(region_id, None)
        if image_id is None:
            continue
        for row, item in programs.waiting.pop(region_id, []):
            item.bitstream_id = None
            refused.append((row, item, (
                'deployable %s is used by ARQ %s and holds %s: it cannot be '
                'programmed with image %s' % (
                    row['deployable_name'], ', '.join(arq_uuids),
                    'image %s' % row['deployable_bitstream_id']
                    if row['deployable_bitstream_id'] else 'no known image',
                    image_id))))
    return refused


def lock_expiry(programs):
    """When the programming locks of ``programs`` run out: after the last
    deadline of the ARQs waiting for them, and a margin."""
    deadlines = [item.deadline for entries in programs.waiting.values()
                 for _, item in entries]
    return max(deadlines) + LOCK_MARGIN


def outcomes(work, decisions):
    """``{deployable id: image id or None}`` for
    ``bind_finishing.record_outcomes``: the image of each region programmed
    in the batch when its agent prepared the ARQ carrying it (as the
    region reported it, else the image asked: its driver confirmed the
    function or cannot read regions back), else None (unknown).
    ``decisions`` are the batch's Decisions. The agent's answer decides,
    whether or not ``record_outcomes`` still applies it to the ARQ
    (unbound meanwhile): the region holds the image either way."""
    by_uuid = {decision.uuid: decision for decision in decisions}
    found = {}
    for item in work:
        if not item.bitstream_id:
            continue
        decision = by_uuid.get(item.uuid)
        if decision is None or decision.outcome != PREPARED:
            found[item.deployable_id] = None
            continue
        reported = (decision.loaded or {}).get('bitstream_id')
        found[item.deployable_id] = reported or item.bitstream_id
    return found


def degraded(work, decisions):
    """``{deployable id: reason}`` of the regions programmed in the batch
    whose load the agent answered as suspect (the driver failed, or the
    region did not show the image): ``record_outcomes`` marks them
    degraded."""
    by_uuid = {decision.uuid: decision for decision in decisions}
    found = {}
    for item in work:
        decision = by_uuid.get(item.uuid)
        if item.bitstream_id and decision is not None and decision.suspect:
            found[item.deployable_id] = decision.reason
    return found

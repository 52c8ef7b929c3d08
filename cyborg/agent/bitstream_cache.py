"""The agent's cache of bitstreams downloaded from Glance.

One directory per host (``<[DEFAULT] state_path>/bitstream-cache``) holds
one file per image and hash, named ``<image id>.<algorithm>.<hash>`` after
the image's Glance ``os_hash_algo`` and ``os_hash_value`` (its md5
``checksum`` when Glance recorded no multihash): an image whose data
changed has another hash, so another file, and is downloaded again.

``BitstreamCache.use`` asks Glance for the image's record (one GET, which
also says whether the caller may still use it) and then:

* a hit: the cached file is hashed again before every use; a file whose
  hash no longer matches (corrupted on disk) is dropped and downloaded
  again;
* a miss: the file is downloaded (Glance's client verifies the hash and
  bounds the size) under a staging name in the directory and renamed into
  place, so that a crash half-way leaves no file under a cached name; the
  staging files of a crashed agent are removed when the cache opens.

The files are bounded by ``capacity`` bytes: the least recently used goes
first, never one in use (a bind or a program holds it). An image larger
than the whole cache is used from its staging file and removed after.
Threads of one agent share the cache: one download per image at a time,
the others waiting for it. The index is rebuilt from the directory when
the agent starts, the files' modification times (touched at each use)
giving the order of their last use.
"""

import collections
import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import threading
import time
import uuid

from cyborg import exception
from cyborg.agent import metrics as agent_metrics
from cyborg.clients import glance as glance_client

LOG = logging.getLogger(__name__)

# The cache's directory in the agent's state directory.
DIRECTORY = 'bitstream-cache'
# Files being downloaded; removed when the cache opens.
STAGING_PREFIX = '.incoming-'
# A cached file's name: image id, hash algorithm, hash value.
_NAME = re.compile(r'^(?P<image>[0-9A-Za-z-]{1,64})\.'
                   r'(?P<algorithm>[0-9a-z_]{1,32})\.'
                   r'(?P<digest>[0-9a-f]{8,256})$')
# Bytes read at a time when hashing a cached file.
CHUNK_SIZE = 1024 * 1024


def cache_directory(state_path):
    """Where the cache of an agent whose ``[DEFAULT] state_path`` is
    ``state_path`` lives."""
    return os.path.join(state_path, DIRECTORY)


def file_name(image_id, algorithm, digest):
    """The name of the cached file of an image with that hash, or None
    when the values cannot make a file name (then it is not cached)."""
    name = '%s.%s.%s' % (image_id, algorithm, str(digest).lower())
    return name if _NAME.match(name) else None


@dataclasses.dataclass
class _Entry:
    """One cached file: its path, size and the uses under way."""

    path: str
    size: int
    users: int = 0


class BitstreamCache:
    """Bitstreams of one host, at most ``capacity`` bytes in ``directory``
    (0: no cache, ``enabled`` is False and nothing is written)."""

    def __init__(self, directory, capacity):
        self.directory = directory
        self.capacity = capacity
        self._lock = threading.Lock()
        # name -> _Entry, least recently used first.
        self._entries = collections.OrderedDict()
        self._downloads = {}
        if capacity > 0:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            self._load()

    @property
    def enabled(self):
        return self.capacity > 0

    @property
    def size(self):
        """Bytes the cached files hold."""
        with self._lock:
            return sum(entry.size for entry in self._entries.values())

    def names(self):
        """The cached files' names, least recently used first."""
        with self._lock:
            return list(self._entries)

    def _load(self):
        """Index the files left by an earlier run, oldest use first."""
        found = []
        for name in os.listdir(self.directory):
            path = os.path.join(self.directory, name)
            if name.startswith(STAGING_PREFIX) or name.startswith('.'):
                _remove(path)
                LOG.info('Removed %s, a download cut short', path)
                continue
            if not _NAME.match(name) or not os.path.isfile(path):
                continue
            status = os.stat(path)
            found.append((status.st_mtime, name, status.st_size))
        for _mtime, name, size in sorted(found):
            self._entries[name] = _Entry(os.path.join(self.directory, name),
                                         size)
        with self._lock:
            self._evict()
        LOG.info('Bitstream cache %s: %d file(s), %d bytes', self.directory,
                 len(self._entries), sum(e.size for e in
                                         self._entries.values()))

    @contextlib.contextmanager
    def use(self, glance, image_id, max_bytes):
        """Yield ``(path, image)``: a verified local file of image
        ``image_id`` and its Glance record, the file kept (not evicted)
        until the block ends.

        :raises: what ``GlanceClient.get_image`` and ``download`` raise
            (ImageNotFound, ImageTooLarge, ImageDataInvalid, GlanceError,
            GlanceUnavailable)
        """
        image = glance.get_image(image_id)
        _check_size(image, max_bytes)
        algorithm, digest = glance_client.expected_hash(image)
        name = file_name(image_id, algorithm, digest)
        with self._download_turn(image_id):
            entry = self._verified_hit(name, image_id, algorithm, digest)
            if entry is None:
                entry, image = self._fetch(glance, image_id, max_bytes)
        try:
            yield entry.path, image
        finally:
            self._release(entry)

    @contextlib.contextmanager
    def _download_turn(self, image_id):
        """One thread at a time looks up and downloads ``image_id``."""
        with self._lock:
            turn = self._downloads.setdefault(image_id, [threading.Lock(), 0])
            turn[1] += 1
        try:
            with turn[0]:
                yield
        finally:
            with self._lock:
                turn[1] -= 1
                if not turn[1]:
                    del self._downloads[image_id]

    def _verified_hit(self, name, image_id, algorithm, digest):
        """The entry of ``name``, held, when its file still has ``digest``;
        None (a miss) otherwise, a corrupted file dropped."""
        with self._lock:
            entry = self._entries.get(name) if name else None
            if entry is None:
                agent_metrics.count_lookup('miss')
                return None
            entry.users += 1
        if _file_digest(entry.path, algorithm) == digest.lower():
            with self._lock:
                self._entries.move_to_end(name)
            _touch(entry.path)
            agent_metrics.count_lookup('hit')
            LOG.info('Image %s found in the bitstream cache', image_id)
            return entry
        LOG.warning('The cached file of image %s no longer has its %s hash '
                    '%s: dropped, downloading it again', image_id,
                    algorithm, digest)
        agent_metrics.count_lookup('corrupted')
        with self._lock:
            entry.users -= 1
            if self._entries.get(name) is entry:
                del self._entries[name]
        _remove(entry.path)
        return None

    def _fetch(self, glance, image_id, max_bytes):
        """Download the image and keep it; (held entry, its record)."""
        staging = os.path.join(self.directory, '%s%s' % (
            STAGING_PREFIX, uuid.uuid4().hex))
        try:
            image = _download(glance, image_id, staging, max_bytes)
            algorithm, digest = glance_client.expected_hash(image)
            name = file_name(image_id, algorithm, digest)
            size = os.path.getsize(staging)
            if name is None or size > self.capacity:
                LOG.info('Image %s (%d bytes) is not cached: it does not '
                         'fit a cache of %d bytes', image_id, size,
                         self.capacity)
                return _Entry(staging, size, users=1), image
            path = os.path.join(self.directory, name)
            os.replace(staging, path)
        except BaseException:
            _remove(staging)
            raise
        with self._lock:
            # Another thread may have cached the same file meanwhile (the
            # image changed between two reads of its record): one entry.
            entry = self._entries.setdefault(name, _Entry(path, size))
            entry.size = size
            entry.users += 1
            self._entries.move_to_end(name)
            self._drop_other_hashes(image_id, name)
            self._evict()
        return entry, image

    def _drop_other_hashes(self, image_id, name):
        """Remove the files of ``image_id`` with another hash than ``name``
        and not in use: Glance no longer serves that data (under the
        lock)."""
        prefix = '%s.' % image_id
        for other in list(self._entries):
            entry = self._entries[other]
            if other != name and other.startswith(prefix) and \
                    not entry.users:
                del self._entries[other]
                _remove(entry.path)
                LOG.info('Removed %s from the bitstream cache: image %s '
                         'has another hash now', other, image_id)

    def _release(self, entry):
        """The use of ``entry`` ended; a file not cached is removed."""
        with self._lock:
            entry.users -= 1
            cached = any(kept is entry for kept in self._entries.values())
            if cached:
                self._evict()
        if not cached and entry.users <= 0 and \
                os.path.basename(entry.path).startswith(STAGING_PREFIX):
            _remove(entry.path)

    def _evict(self):
        """Remove least recently used files not in use until the cache
        holds at most ``capacity`` bytes (under the lock)."""
        total = sum(entry.size for entry in self._entries.values())
        for name in list(self._entries):
            if total <= self.capacity:
                return
            entry = self._entries[name]
            if entry.users > 0:
                continue
            del self._entries[name]
            _remove(entry.path)
            total -= entry.size
            agent_metrics.CACHE_EVICTIONS.inc()
            LOG.info('Evicted %s from the bitstream cache (%d bytes)', name,
                     entry.size)


def _check_size(image, max_bytes):
    if image.get('size') is not None and image['size'] > max_bytes:
        raise exception.ImageTooLarge(image_id=image['id'],
                                      size=image['size'],
                                      max_bytes=max_bytes)


def _download(glance, image_id, path, max_bytes):
    """``glance.download`` to ``path``, the bytes counted; the record."""
    image = glance.download(image_id, path, max_bytes)
    agent_metrics.count_downloaded(os.path.getsize(path))
    return image


def _file_digest(path, algorithm):
    """The hex digest of the file at ``path``; None when it cannot be
    read."""
    try:
        hasher = hashlib.new(algorithm)
        with open(path, 'rb') as data:
            for chunk in iter(lambda: data.read(CHUNK_SIZE), b''):
                hasher.update(chunk)
    except (OSError, ValueError) as error:
        LOG.warning('Cannot hash %s: %s', path, error)
        return None
    return hasher.hexdigest()


def _touch(path):
    """Mark ``path`` as just used (its mtime orders the index at start)."""
    try:
        now = time.time()
        os.utime(path, (now, now))
    except OSError:
        pass


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

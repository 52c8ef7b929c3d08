"""The agent's bitstream cache: hits, the hash check, LRU, the bound,
threads, a crash and a restart.

Glance is a stand-in keeping images in memory: it answers records as
Glance does (``os_hash_algo``, ``os_hash_value``, ``size``) and counts the
files it serves; the multi-process test uses a real Glance.
"""

import hashlib
import os
import threading
import time
import uuid

import fixtures

from cyborg import conf
from cyborg import exception
from cyborg.agent import bitstream_cache
from cyborg.agent import manager
from cyborg.agent import metrics as agent_metrics
from cyborg.agent import programming
from cyborg.tests import base

KIB = 1024


class MemoryGlance:
    """Images in memory; ``served`` counts each image's file downloads."""

    def __init__(self):
        self.images = {}
        self.served = {}
        self.records = 0
        self.fail_next_download = None
        self.gate = None

    def add(self, data, image_id=None, algorithm='sha512'):
        image_id = image_id or str(uuid.uuid4())
        self.images[image_id] = (data, algorithm)
        return image_id

    def get_image(self, image_id):
        self.records += 1
        if image_id not in self.images:
            raise exception.ImageNotFound(image_id=image_id)
        data, algorithm = self.images[image_id]
        return {'id': image_id, 'size': len(data),
                'os_hash_algo': algorithm,
                'os_hash_value': hashlib.new(algorithm, data).hexdigest()}

    def download(self, image_id, dest_path, max_bytes):
        image = self.get_image(image_id)
        if self.gate is not None:
            self.gate.wait(10)
        self.served[image_id] = self.served.get(image_id, 0) + 1
        if image['size'] > max_bytes:
            raise exception.ImageTooLarge(image_id=image_id,
                                          size=image['size'],
                                          max_bytes=max_bytes)
        if self.fail_next_download:
            failure, self.fail_next_download = self.fail_next_download, None
            with open(dest_path + '.part', 'wb') as half:
                half.write(b'half')
            raise failure
        with open(dest_path, 'wb') as data_file:
            data_file.write(self.images[image_id][0])
        return image


def _count(counter, *labels):
    return (counter.labels(*labels) if labels else counter)._value.get()


class BitstreamCacheTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'cache')
        self.glance = MemoryGlance()

    def cache(self, capacity=64 * KIB):
        return bitstream_cache.BitstreamCache(self.directory, capacity)

    def read(self, cache, image_id, max_bytes=1024 * KIB):
        """(path, content) of a use of ``image_id``."""
        with cache.use(self.glance, image_id, max_bytes) as (path, image):
            self.assertEqual(image_id, image['id'])
            with open(path, 'rb') as data:
                return path, data.read()

    def test_second_use_downloads_nothing(self):
        cache = self.cache()
        image_id = self.glance.add(b'a' * KIB)
        hits = _count(agent_metrics.CACHE_LOOKUPS, 'hit')
        misses = _count(agent_metrics.CACHE_LOOKUPS, 'miss')
        downloaded = _count(agent_metrics.DOWNLOADED_BYTES)

        first = self.read(cache, image_id)
        second = self.read(cache, image_id)

        self.assertEqual(first, second)
        self.assertEqual(b'a' * KIB, second[1])
        self.assertEqual({image_id: 1}, self.glance.served)
        self.assertEqual(os.path.dirname(first[0]), self.directory)
        self.assertEqual(1, _count(agent_metrics.CACHE_LOOKUPS, 'hit') - hits)
        self.assertEqual(1,
                         _count(agent_metrics.CACHE_LOOKUPS, 'miss') - misses)
        self.assertEqual(KIB,
                         _count(agent_metrics.DOWNLOADED_BYTES) - downloaded)

    def test_a_changed_hash_is_downloaded_again(self):
        cache = self.cache()
        image_id = self.glance.add(b'old' * KIB)
        old_path, _data = self.read(cache, image_id)

        self.glance.add(b'new' * KIB, image_id=image_id)
        new_path, data = self.read(cache, image_id)

        self.assertEqual(b'new' * KIB, data)
        self.assertEqual({image_id: 2}, self.glance.served)
        self.assertNotEqual(old_path, new_path)
        # The old data is no longer Glance's: its file goes.
        self.assertEqual([os.path.basename(new_path)], cache.names())
        self.assertFalse(os.path.exists(old_path))

    def test_a_corrupted_file_is_dropped_and_downloaded_again(self):
        cache = self.cache()
        image_id = self.glance.add(b'good' * KIB)
        path, _data = self.read(cache, image_id)
        with open(path, 'r+b') as data_file:
            data_file.write(b'bad!')
        corrupted = _count(agent_metrics.CACHE_LOOKUPS, 'corrupted')

        again, data = self.read(cache, image_id)

        self.assertEqual(b'good' * KIB, data)
        self.assertEqual(path, again)
        self.assertEqual({image_id: 2}, self.glance.served)
        self.assertEqual(
            1, _count(agent_metrics.CACHE_LOOKUPS, 'corrupted') - corrupted)

    def test_a_removed_file_is_downloaded_again(self):
        cache = self.cache()
        image_id = self.glance.add(b'x' * KIB)
        path, _data = self.read(cache, image_id)
        os.unlink(path)

        self.assertEqual(b'x' * KIB, self.read(cache, image_id)[1])
        self.assertEqual({image_id: 2}, self.glance.served)

    def test_least_recently_used_goes_first(self):
        cache = self.cache(capacity=2 * KIB)
        first, second, third = (self.glance.add(bytes([n]) * KIB)
                                for n in range(3))
        self.read(cache, first)
        self.read(cache, second)
        self.read(cache, first)  # second is now the least recently used
        evictions = _count(agent_metrics.CACHE_EVICTIONS)

        self.read(cache, third)

        self.assertEqual([first, third],
                         [name.split('.')[0] for name in cache.names()])
        self.assertEqual(2 * KIB, cache.size)
        self.assertEqual(sorted(cache.names()),
                         sorted(os.listdir(self.directory)))
        self.assertEqual(1, _count(agent_metrics.CACHE_EVICTIONS) - evictions)
        self.read(cache, second)
        self.assertEqual({first: 1, second: 2, third: 1}, self.glance.served)

    def test_a_file_in_use_is_not_evicted(self):
        cache = self.cache(capacity=KIB)
        held, other = (self.glance.add(bytes([n]) * KIB) for n in range(2))
        with cache.use(self.glance, held, 2 * KIB) as (path, _image):
            other_path, _data = self.read(cache, other)
            # The least recently used, but in use: the other one went.
            self.assertTrue(os.path.exists(path))
            self.assertFalse(os.path.exists(other_path))
            self.assertEqual([held],
                             [n.split('.')[0] for n in cache.names()])
        self.assertEqual(KIB, cache.size)
        self.read(cache, held)
        self.assertEqual({held: 1, other: 1}, self.glance.served)

    def test_an_image_larger_than_the_cache_is_used_and_removed(self):
        cache = self.cache(capacity=KIB)
        kept = self.glance.add(b'k' * KIB)
        self.read(cache, kept)
        large = self.glance.add(b'L' * (2 * KIB))

        path, data = self.read(cache, large)

        self.assertEqual(b'L' * (2 * KIB), data)
        self.assertFalse(os.path.exists(path))
        self.assertEqual([kept], [n.split('.')[0] for n in cache.names()])
        self.assertEqual(sorted(cache.names()),
                         sorted(os.listdir(self.directory)))

    def test_the_limit_of_the_caller_holds_on_a_hit_too(self):
        cache = self.cache()
        image_id = self.glance.add(b'z' * KIB)
        self.read(cache, image_id)

        self.assertRaises(exception.ImageTooLarge, self.read, cache,
                          image_id, max_bytes=KIB - 1)

    def test_a_restart_finds_the_files_again(self):
        cache = self.cache(capacity=2 * KIB)
        older, newer = (self.glance.add(bytes([n]) * KIB) for n in range(2))
        self.read(cache, older)
        self.read(cache, newer)
        # The files' times say which was used last, whatever the clock.
        past = time.time() - 60
        path = os.path.join(self.directory, cache.names()[0])
        os.utime(path, (past, past))
        # A download cut short by a crash.
        with open(os.path.join(self.directory,
                               bitstream_cache.STAGING_PREFIX + 'x'),
                  'wb') as half:
            half.write(b'half')

        again = self.cache(capacity=2 * KIB)

        self.assertEqual(cache.names(), again.names())
        self.assertEqual(sorted(again.names()),
                         sorted(os.listdir(self.directory)))
        self.read(again, older)
        self.read(again, newer)
        self.assertEqual({older: 1, newer: 1}, self.glance.served)

    def test_a_smaller_size_after_a_restart_evicts_the_oldest(self):
        cache = self.cache()
        older, newer = (self.glance.add(bytes([n]) * KIB) for n in range(2))
        self.read(cache, older)
        past = time.time() - 60
        os.utime(os.path.join(self.directory, cache.names()[0]),
                 (past, past))
        self.read(cache, newer)

        again = self.cache(capacity=KIB)

        self.assertEqual([newer], [n.split('.')[0] for n in again.names()])

    def test_a_failed_download_leaves_no_file(self):
        cache = self.cache()
        image_id = self.glance.add(b'y' * KIB)
        self.glance.fail_next_download = exception.GlanceUnavailable(
            reason='cut')

        self.assertRaises(exception.GlanceUnavailable, self.read, cache,
                          image_id)

        self.assertEqual([], cache.names())
        # The client's own partial file aside, nothing under the cache's
        # names; the next use downloads.
        self.assertEqual([], [name for name in os.listdir(self.directory)
                              if not name.endswith('.part')])
        self.assertEqual(b'y' * KIB, self.read(cache, image_id)[1])

    def test_concurrent_uses_download_once(self):
        cache = self.cache()
        image_id = self.glance.add(b'c' * KIB)
        self.glance.gate = threading.Event()
        results = []

        def use():
            results.append(self.read(cache, image_id)[1])

        threads = [threading.Thread(target=use) for _ in range(5)]
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        self.glance.gate.set()
        for thread in threads:
            thread.join(10)

        self.assertEqual([b'c' * KIB] * 5, results)
        self.assertEqual({image_id: 1}, self.glance.served)

    def test_a_hit_reads_the_record_but_not_the_file(self):
        cache = self.cache()
        image_id = self.glance.add(b'r' * KIB)
        self.read(cache, image_id)
        records = self.glance.records

        self.read(cache, image_id)

        # Whether the image still exists and which hash it has: one GET.
        self.assertEqual(1, self.glance.records - records)
        self.assertEqual({image_id: 1}, self.glance.served)

    def test_an_unknown_image_is_not_found(self):
        self.assertRaises(exception.ImageNotFound, self.read, self.cache(),
                          str(uuid.uuid4()))


class DownloadedTest(base.TestCase):
    """``programming.downloaded`` with and without the cache."""

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.directory = os.path.join(root, 'cache')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch('tempfile.tempdir', self.tmp))
        self.glance = MemoryGlance()

    def test_with_the_cache_the_file_is_the_cached_one(self):
        cache = bitstream_cache.BitstreamCache(self.directory, 64 * KIB)
        image_id = self.glance.add(b'b' * KIB)
        for _ in range(2):
            with programming.downloaded(self.glance, image_id, 64 * KIB,
                                        cache) as (path, _bitstream):
                self.assertEqual(self.directory, os.path.dirname(path))
        self.assertEqual({image_id: 1}, self.glance.served)
        self.assertEqual([], os.listdir(self.tmp))

    def test_a_disabled_cache_downloads_every_time(self):
        cache = bitstream_cache.BitstreamCache(self.directory, 0)
        image_id = self.glance.add(b'b' * KIB)
        for _ in range(2):
            with programming.downloaded(self.glance, image_id, 64 * KIB,
                                        cache) as (path, _bitstream):
                self.assertTrue(path.startswith(self.tmp))
        self.assertFalse(cache.enabled)
        self.assertEqual({image_id: 2}, self.glance.served)
        self.assertFalse(os.path.exists(self.directory))
        self.assertEqual([], os.listdir(self.tmp))

    def test_glance_failures_are_download_failures(self):
        cache = bitstream_cache.BitstreamCache(self.directory, 64 * KIB)
        error = self.assertRaises(
            programming.DownloadFailed, programming.downloaded(
                self.glance, str(uuid.uuid4()), KIB, cache).__enter__)
        self.assertEqual(programming.ProgramResult.INVALID_BITSTREAM,
                         error.code)
        self.glance.fail_next_download = exception.GlanceUnavailable(
            reason='down')
        image_id = self.glance.add(b'b' * KIB)
        error = self.assertRaises(
            programming.DownloadFailed, programming.downloaded(
                self.glance, image_id, 64 * KIB, cache).__enter__)
        self.assertEqual(programming.ProgramResult.FAILED, error.code)


class AgentPrefetchTest(base.TestCase):
    """``AgentManager.prefetch_bitstream``: the cache of ``state_path``."""

    def setUp(self):
        super().setUp()
        self.agent = manager.AgentManager(host='compute-1', driver_names=[])
        self.agent.glance = self.glance = MemoryGlance()

    def test_a_prefetch_fills_the_cache_once(self):
        image_id = self.glance.add(b'p' * KIB)

        self.agent.prefetch_bitstream(None, image_id)
        self.agent.prefetch_bitstream(None, image_id)

        self.assertEqual({image_id: 1}, self.glance.served)
        directory = bitstream_cache.cache_directory(conf.CONF.state_path)
        self.assertEqual([image_id], [name.split('.')[0]
                                      for name in os.listdir(directory)])

    def test_a_failed_prefetch_is_logged(self):
        logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))
        missing = str(uuid.uuid4())

        self.agent.prefetch_bitstream(None, missing)

        self.assertIn('Prefetch of image %s failed' % missing, logger.output)

    def test_without_a_cache_nothing_is_downloaded(self):
        self.flags(bitstream_cache_size=0, group='agent')
        image_id = self.glance.add(b'p' * KIB)

        self.agent.prefetch_bitstream(None, image_id)

        self.assertEqual({}, self.glance.served)

    def test_a_cache_that_cannot_be_made_is_disabled(self):
        blocker = os.path.join(conf.CONF.state_path, 'file')
        with open(blocker, 'w'):
            pass
        self.flags(state_path=blocker)

        self.assertFalse(self.agent.bitstream_cache.enabled)

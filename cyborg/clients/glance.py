"""Cyborg's Glance client: FPGA bitstreams kept as Glance images.

python-glanceclient's v2 client over a keystoneauth1 session, configured by
the [glance] group (auth, session and adapter options) of the configuration
its caller hands in. The session (connection pool, TLS settings) is made
once per process and shared by every client; each client has its own auth
plugin: the [glance] one, or a caller's token when a request context
carrying one is given.

Downloads are verified: the bytes must match the image's ``os_hash_algo``/
``os_hash_value`` (its md5 ``checksum`` when Glance recorded no os_hash), and
no more than the caller's limit is ever written.
"""

import hashlib
import logging
import os
import tempfile
import threading

import glanceclient
from glanceclient import exc as glance_exc
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import token_endpoint
import requests

from cyborg import exception

LOG = logging.getLogger(__name__)

GROUP = 'glance'
API_VERSION = '2'
# Bitstreams are opaque files: Glance's "raw" disk and "bare" container.
DISK_FORMAT = 'raw'
CONTAINER_FORMAT = 'bare'
# Images per page of a listing (Glance's own maximum is larger).
PAGE_SIZE = 100
# Bytes read from Glance per chunk of a download.
CHUNK_SIZE = 64 * 1024

_SESSION = None
_SESSION_LOCK = threading.Lock()


def _shared_session(conf):
    """The process's keystoneauth session, made from [glance] on first use."""
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            _SESSION = ks_loading.load_session_from_conf_options(conf, GROUP)
        return _SESSION


def _load_client(conf, context=None):
    """glanceclient's v2 client for [glance], as ``context``'s user if any.

    The endpoint is [glance] endpoint_override, else the service catalog's
    (found with the [glance] auth); with a context carrying a token, that
    token is sent instead of the [glance] credentials.
    """
    session = _shared_session(conf)
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    adapter = ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth)
    endpoint = adapter.get_endpoint()
    if not endpoint:
        raise exception.GlanceUnavailable(
            reason='the [glance] options name no endpoint')
    token = getattr(context, 'auth_token', None)
    if token:
        auth = token_endpoint.Token(endpoint, token)
    return glanceclient.Client(
        API_VERSION, session=session, auth=auth, endpoint_override=endpoint,
        global_request_id=getattr(context, 'global_id', None))


def _as_dict(image):
    """An image of glanceclient (a warlock model) as a plain dict."""
    return dict(image)


def expected_hash(image):
    """(algorithm, hex digest) the image's data must have.

    Glance's multihash (``os_hash_algo``/``os_hash_value``), or md5 and the
    legacy ``checksum`` when the image has no multihash.

    :raises: ImageDataInvalid when the image records neither
    """
    if image.get('os_hash_algo') and image.get('os_hash_value'):
        return image['os_hash_algo'], image['os_hash_value']
    if image.get('checksum'):
        return 'md5', image['checksum']
    raise exception.ImageDataInvalid(
        image_id=image['id'], reason='Glance records no hash of its data')


def _hasher(image_id, algorithm):
    try:
        return hashlib.new(algorithm)
    except ValueError as error:
        raise exception.ImageDataInvalid(
            image_id=image_id,
            reason='hash algorithm %s is not available: %s'
                   % (algorithm, error)) from error


def _remove_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class GlanceClient:
    """Images of cyborg (FPGA bitstreams) in Glance.

    ``conf`` is the configuration whose [glance] group says how to reach
    Glance; ``context``, a request context, makes the calls with its token.
    ``client`` (a glanceclient v2 client) replaces the one ``conf`` would
    make. The client is made at the first call.
    """

    def __init__(self, conf, context=None, client=None):
        self._conf = conf
        self._context = context
        self._client = client
        self._lock = threading.Lock()

    def _glance(self):
        with self._lock:
            if self._client is None:
                self._client = self._call(
                    'connect', _load_client, self._conf, self._context)
            return self._client

    def get_image(self, image_id):
        """The image as Glance shows it (a dict, properties top-level).

        :raises: ImageNotFound; GlanceError, GlanceUnavailable
        """
        return _as_dict(self._call('GET image %s' % image_id,
                                   self._glance().images.get, image_id,
                                   image_id=image_id))

    def list_images(self, filters=None):
        """Every image matching ``filters``, following all pages.

        ``filters`` maps image properties (custom ones included) to the
        value they must have; its ``tag`` names a tag, or a list of tags
        the image must all have.
        """
        filters = dict(filters or {})
        tags = filters.pop('tag', [])
        if isinstance(tags, str):
            tags = [tags]
        filters['tag'] = list(tags)

        def fetch():
            images = self._glance().images.list(filters=filters,
                                                page_size=PAGE_SIZE)
            return [_as_dict(image) for image in images]
        return self._call('GET images', fetch)

    def upload(self, path, name, properties=None, tags=()):
        """Create an image named ``name`` holding the file at ``path``.

        The image gets ``properties`` (strings) and ``tags``; when its data
        cannot be uploaded it is deleted again. Returns the active image.

        :raises: GlanceError, GlanceUnavailable; OSError for ``path``
        """
        size = os.path.getsize(path)
        fields = dict(properties or {}, name=name, disk_format=DISK_FORMAT,
                      container_format=CONTAINER_FORMAT, tags=list(tags))
        glance = self._glance()
        image = self._call('POST image %s' % name, glance.images.create,
                           **fields)
        try:
            with open(path, 'rb') as data:
                self._call('PUT data of image %s' % image['id'],
                           glance.images.upload, image['id'], data,
                           image_size=size, image_id=image['id'])
        except BaseException:
            self._delete_half_created(image['id'])
            raise
        LOG.info('Uploaded %s (%d bytes) to Glance as image %s', path, size,
                 image['id'])
        return self.get_image(image['id'])

    def delete_image(self, image_id):
        """Delete the image and its data.

        :raises: ImageNotFound; GlanceError (a protected image: 403),
            GlanceUnavailable
        """
        self._call('DELETE image %s' % image_id,
                   self._glance().images.delete, image_id,
                   image_id=image_id)

    def _delete_half_created(self, image_id):
        try:
            self.delete_image(image_id)
        except exception.CyborgException as error:
            LOG.error('Image %s, whose upload failed, could not be deleted: '
                      '%s', image_id, error)
        else:
            LOG.info('Deleted image %s, whose upload failed', image_id)

    def download(self, image_id, dest_path, max_bytes):
        """Write the image's data to ``dest_path``; return the image.

        The data goes to a private (0600) temporary file next to
        ``dest_path``, renamed to it once its hash matches the image's; on
        any failure the temporary file is removed and ``dest_path`` left
        as it was.

        :raises: ImageNotFound; ImageTooLarge when the image has more than
            ``max_bytes`` bytes; ImageDataInvalid when the data does not
            match the image's hash (or there is none or no data);
            GlanceError, GlanceUnavailable
        """
        image = self.get_image(image_id)
        if image.get('size') is not None and image['size'] > max_bytes:
            raise exception.ImageTooLarge(image_id=image_id,
                                          size=image['size'],
                                          max_bytes=max_bytes)
        algorithm, expected = expected_hash(image)
        hasher = _hasher(image_id, algorithm)
        directory, name = os.path.split(os.path.abspath(dest_path))
        descriptor, temporary = tempfile.mkstemp(
            dir=directory, prefix='.%s.' % name, suffix='.part')
        try:
            with os.fdopen(descriptor, 'wb') as data_file:
                self._stream(image_id, data_file, hasher, max_bytes)
            if hasher.hexdigest() != expected:
                raise exception.ImageDataInvalid(
                    image_id=image_id,
                    reason='its %s hash is %s, Glance records %s'
                           % (algorithm, hasher.hexdigest(), expected))
            os.replace(temporary, dest_path)
        except BaseException:
            _remove_quietly(temporary)
            raise
        LOG.info('Downloaded image %s to %s (%s verified)', image_id,
                 dest_path, algorithm)
        return image

    def _stream(self, image_id, data_file, hasher, max_bytes):
        """Copy the image's data to ``data_file``, hashing it on the way."""
        url = '/v2/images/%s/file' % image_id
        response, body = self._call('GET data of image %s' % image_id,
                                    self._glance().http_client.get, url,
                                    image_id=image_id)
        try:
            if response.status_code == 204:
                raise exception.ImageDataInvalid(image_id=image_id,
                                                 reason='it has no data')
            written = 0
            for chunk in response.iter_content(CHUNK_SIZE):
                written += len(chunk)
                if written > max_bytes:
                    raise exception.ImageTooLarge(
                        image_id=image_id, size='at least %d' % written,
                        max_bytes=max_bytes)
                hasher.update(chunk)
                data_file.write(chunk)
        except requests.RequestException as error:
            raise exception.GlanceUnavailable(
                reason='GET data of image %s: %s' % (image_id, error)
            ) from error
        finally:
            response.close()

    def _call(self, action, function, *args, image_id=None, **kwargs):
        """``function(*args, **kwargs)`` with Glance's failures as cyborg's."""
        try:
            return function(*args, **kwargs)
        except glance_exc.HTTPNotFound as error:
            if image_id is None:
                raise exception.GlanceError(status=404, action=action,
                                            detail=str(error)) from error
            raise exception.ImageNotFound(image_id=image_id) from error
        except glance_exc.HTTPException as error:
            raise exception.GlanceError(status=error.code, action=action,
                                        detail=str(error)) from error
        except (glance_exc.CommunicationError, glance_exc.InvalidEndpoint,
                ks_exceptions.ConnectionError,
                ks_exceptions.RequestTimeout) as error:
            raise exception.GlanceUnavailable(
                reason='%s: %s' % (action, error)) from error
        except ks_exceptions.ClientException as error:
            # No endpoint, no auth plugin, failed discovery: configuration.
            raise exception.GlanceUnavailable(
                reason='%s: [glance] options unusable: %s'
                       % (action, error)) from error

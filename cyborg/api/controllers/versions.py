"""The version documents of GET / and GET /v2, as upstream's clients read them."""

from cyborg.api import microversions

NAME = 'OpenStack Cyborg API'
DESCRIPTION = (
    'Cyborg is the OpenStack project for lifecycle management of hardware '
    'accelerators, such as GPUs,FPGAs, AI chips, security accelerators, '
    'etc.')


def v2_version(version_id, href, version_key=True):
    """The description of API v2, under ``version_id`` and linking to
    ``href``; with the ``version`` key (the newest microversion, as
    ``max_version``) when ``version_key``."""
    document = {
        'id': version_id,
        'status': 'CURRENT',
        'min_version': str(microversions.MIN_VERSION),
        'max_version': str(microversions.MAX_VERSION),
        'links': [{'href': href, 'rel': 'self'}],
    }
    if version_key:
        document['version'] = str(microversions.MAX_VERSION)
    return document


def root_document(base_url):
    """GET /: every API version, and the default one, linked from
    ``base_url``. Each has ``version``, as Nova's have: keystoneauth reads
    it there as the newest microversion."""
    version = v2_version('v2', base_url + '/v2')
    return {
        'name': NAME,
        'description': DESCRIPTION,
        'versions': [version],
        'default_version': dict(version),
    }


def v2_document(base_url, version):
    """GET /v2: this version alone, as a bare object, linked from
    ``base_url``; ``version`` only from microversion 2.4 (``version``
    negotiated): keystoneauth reads a bare document's ``version`` as a
    version document of its own, so a client's discovery, which asks for no
    microversion, must not meet it."""
    return v2_version('v2.0', base_url + '/v2/',
                      microversions.supports_version_key(version))

"""The version documents of GET / and GET /v2 (api-contract.md §1)."""

from cyborg.api import microversions

NAME = 'OpenStack Cyborg API'
DESCRIPTION = (
    'Cyborg is the OpenStack project for lifecycle management of hardware '
    'accelerators, such as GPUs,FPGAs, AI chips, security accelerators, '
    'etc.')


def v2_version(version_id, href):
    """The description of API v2, under ``version_id`` and linking to ``href``."""
    return {
        'id': version_id,
        'status': 'CURRENT',
        'min_version': str(microversions.MIN_VERSION),
        'max_version': str(microversions.MAX_VERSION),
        'links': [{'href': href, 'rel': 'self'}],
    }


def root_document(base_url):
    """GET /: every API version, and the default one, linked from ``base_url``."""
    version = v2_version('v2', base_url + '/v2')
    return {
        'name': NAME,
        'description': DESCRIPTION,
        'versions': [version],
        'default_version': dict(version),
    }


def v2_document(base_url):
    """GET /v2: this version alone, as a bare object, linked from ``base_url``."""
    return v2_version('v2.0', base_url + '/v2/')

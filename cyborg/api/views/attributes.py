"""Attributes as the API shows them (Cyborg API v2 field names).

From microversion 2.4 an attribute nested under another (its
``parent_attribute_id``) is shown under its parent: each attribute has
``parent_attribute_uuid`` and ``children``, the attributes nested directly
under it, shown the same way; a list holds the top-level attributes only.
Below 2.4 every attribute is shown flat, as upstream does.
"""

import operator

from cyborg.api import links
from cyborg.api import microversions
from cyborg.api.views import listing
from cyborg.objects import attribute as attribute_objects

RESOURCE = 'attributes'


def one(attribute, base_url):
    """The response dict of one attribute, below microversion 2.4."""
    return {
        'uuid': attribute.uuid,
        'deployable_id': attribute.deployable_id,
        'key': attribute.key,
        'value': attribute.value,
        'created_at': listing.timestamp(attribute.created_at),
        'updated_at': listing.timestamp(attribute.updated_at),
        'links': links.make_links(base_url, RESOURCE, attribute.uuid),
    }


_ROW_COLUMNS = ('uuid', 'deployable_id', 'key', 'value', 'created_at',
                'updated_at')


def collection(rows, query, params, base_url):
    """``{"attributes": [...]}`` with a ``next`` link when the page is
    full, below microversion 2.4: ``rows`` of
    ``cyborg.objects.Attribute.list_rows``, rendered as ``one`` renders an
    Attribute."""
    make_links = listing.link_maker(RESOURCE, base_url)
    return listing.collection(RESOURCE, [{
        'uuid': uuid,
        'deployable_id': deployable_id,
        'key': key,
        'value': value,
        'created_at': created_at,
        'updated_at': updated_at,
        'links': make_links(uuid),
    } for (_, uuid, deployable_id, _, key, value, created_at,
           updated_at) in listing.values_of(rows, _LIST_COLUMNS)],
        query, params, base_url)


# A list row's columns, in the order of its SELECT (``values_of`` then
# hands the rows over as they are); a 2.4 list's rows have one more.
_LIST_COLUMNS = ('id', 'uuid', 'deployable_id', 'parent_attribute_id', 'key',
                 'value', 'created_at', 'updated_at')
_TOP_LEVEL_COLUMNS = _LIST_COLUMNS + ('has_children',)


def _getter(row):
    """A function of a row like ``row`` giving its ``_ROW_COLUMNS``: by
    position for a database row (see ``listing.values_of``; a row's
    ``_fields`` is built anew on each reading, so once per query here),
    by attribute for an Attribute object."""
    fields = getattr(row, '_fields', None)
    if fields is None:
        return operator.attrgetter(*_ROW_COLUMNS)
    return operator.itemgetter(*[fields.index(name)
                                 for name in _ROW_COLUMNS])


def _renderer(make_links):
    """A function rendering an ``AttributeTree`` and what is nested under
    it. The top rows of one answer come from one query and the nested ones
    from another: each kind's getter is made once."""
    getters = {}

    def render(tree, nested=False):
        get = getters.get(nested)
        if get is None:
            get = getters[nested] = _getter(tree.row)
        uuid, deployable_id, key, value, created_at, updated_at = get(
            tree.row)
        return {
            'uuid': uuid,
            'deployable_id': deployable_id,
            'key': key,
            'value': value,
            'parent_attribute_uuid': tree.parent_uuid,
            'children': [render(child, True) for child in tree.children],
            'created_at': listing.timestamp(created_at),
            'updated_at': listing.timestamp(updated_at),
            'links': make_links(uuid),
        }
    return render


def one_tree(tree, base_url):
    """The response dict of one attribute from microversion 2.4: ``tree``
    is a ``cyborg.objects.attribute.AttributeTree``."""
    return _renderer(listing.link_maker(RESOURCE, base_url))(tree)


def tree_collection(trees, query, params, base_url):
    """``{"attributes": [...]}`` of top-level attribute trees (2.4), with a
    ``next`` link when the page is full."""
    make_links = listing.link_maker(RESOURCE, base_url)
    rows = getattr(trees, 'flat_rows', None)
    if rows is None:
        render = _renderer(make_links)
        items = [render(tree) for tree in trees]
    else:
        # Nothing nested under the page (the usual one): each top-level
        # row as _renderer renders a tree without children (their parent
        # uuid is None), read in one pass.
        items = [{
            'uuid': uuid,
            'deployable_id': deployable_id,
            'key': key,
            'value': value,
            'parent_attribute_uuid': None,
            'children': [],
            'created_at': created_at,
            'updated_at': updated_at,
            'links': make_links(uuid),
        } for (_, uuid, deployable_id, _, key, value, created_at,
               updated_at, _) in listing.values_of(rows, _TOP_LEVEL_COLUMNS)]
    return listing.collection(RESOURCE, items, query, params, base_url)


def created(attribute, version, base_url):
    """The answer of POST /v2/attributes at ``version``: the new attribute
    (an object), which the API creates at the top level with nothing
    nested under it."""
    if microversions.supports_nested_attributes(version):
        return one_tree(attribute_objects.AttributeTree(
            row=attribute, parent_uuid=None, children=[]), base_url)
    return one(attribute, base_url)


def of_deployable(trees, base_url):
    """``{"attributes": [...]}``: the answer of
    GET /v2/deployables/{uuid}/attributes[/{key}] (2.4), every attribute
    at once (no pages)."""
    render = _renderer(listing.link_maker(RESOURCE, base_url))
    return {RESOURCE: [render(tree) for tree in trees]}

"""The drain and undrain actions of devices and deployables (2.6): their
optional body, and the ``?drain=`` list filter.

``POST .../drain`` and ``.../undrain`` take no body or ``{"reason": "..."}``:
the reason is kept in the ``drain`` (``undrain``) entry of the history,
where it is shown; nothing else stores it.
"""

from cyborg.api.schemas import body as body_schemas
from cyborg.api.schemas import declarations
from cyborg.api.schemas import resources
from cyborg.common import columns
from cyborg.common import vocabulary

_REASON_COLUMN = columns.of('HistoryEntry', 'reason')

BODY = declarations.Object(
    fields={
        'reason': declarations.String(
            min_length=1, column=_REASON_COLUMN,
            description='Why (a ticket, "replace the card"): kept as the '
                        '``reason`` of the history entry.',
            messages=dict.fromkeys(
                ('type', 'length', 'empty'), 'reason must be a string of 1 '
                'to {max_length} characters')),
    },
    description='Optional: no body, or an object with a ``reason``.')

# The values of ?drain=: the derived states, and ``none`` for what is not
# drained at all (the API shows null); its declaration (from 2.6).
NOT_DRAINED = 'none'
FILTER_VALUES = vocabulary.DrainState.ALL + (NOT_DRAINED,)
FILTER = declarations.Enum(
    FILTER_VALUES,
    messages={'choice': '{name} must be one of {choices}, not {value!r}'},
    extensions={resources.MICROVERSION: '2.6'})
FILTER_DESCRIPTION = (
    'From microversion 2.6: only the %s whose drain is ``draining`` (an '
    'ARQ still holds one of their attach handles), ``drained`` (none '
    'does) or ``none`` (not drained). Below 2.6 an unknown parameter '
    '(400).')


def filters(query):
    """``query`` (a ListQuery) with its ``drain`` filter as the database
    compares it: ``none`` is NULL, the state shown when nothing is
    drained."""
    if query.filters.get('drain') == NOT_DRAINED:
        query.filters['drain'] = None
    return query


def reason(request):
    """The ``reason`` of a drain or undrain request, None without a body
    (or without a reason in it).

    :raises: exception.InvalidParameterValue (400) for a body that is not
        an object with at most a reason of 1 to 255 characters; the
        errors of ``body.json_body``
    """
    if not _has_body(request):
        return None
    return BODY.parse('body', body_schemas.json_body(request)).get('reason')


def _has_body(request):
    """Whether ``request`` has a body: the API's RequestBody middleware
    decoded one (an empty body is none), or, without it, a length."""
    if body_schemas.ENVIRON_KEY in request.environ:
        return True
    return bool(request.content_length)

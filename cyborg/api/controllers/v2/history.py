"""GET .../history of a device or a deployable (microversion 2.5).

Both collections' controllers hand a ``{uuid}/history`` GET here: the
rule, the query (``limit``, ``marker``), the caller's scope (admins and
the service role every entry, others those of their own project's ARQs:
``cyborg.policies.history``), one page newest first. Below 2.5 the path
is unknown (404). Nothing changes an entry: other methods are 405 (the
route table declares GET only).
"""

import pecan

from cyborg.api import microversions
from cyborg.api.schemas import history as history_schemas
from cyborg.api.views import history as history_views
from cyborg.objects import history as history_objects
from cyborg.policies import history as history_policies

SEGMENT = 'history'


def is_history(remainder):
    """Whether the path segments after a uuid name its history."""
    return list(remainder) == [SEGMENT]


def page(request, collection, uuid, rule):
    """``{"history": [...]}`` of the device or deployable ``uuid``
    (``collection`` ``devices`` or ``deployables``).

    :raises: 404 below 2.5 and for an unknown uuid; 403 when ``rule``
        refuses; 400 for a bad ``limit`` or ``marker``
    """
    if not microversions.supports_history(request.version):
        pecan.abort(404)
    request.context.can(rule)
    params = {name: values[0] if len(values) == 1 else values
              for name, values in request.GET.dict_of_lists().items()}
    query = history_schemas.list_query(params, request.max_limit)
    read = (history_objects.of_device if collection == 'devices'
            else history_objects.of_deployable)
    rows = read(request.context, uuid,
                arq_project_id=history_policies.arq_project_filter(
                    request.context),
                limit=query.limit, marker=query.marker)
    return history_views.collection(
        rows, history_objects.FIELDS, query, params, request.base_url,
        '/v2/%s/%s/%s' % (collection, uuid, SEGMENT))

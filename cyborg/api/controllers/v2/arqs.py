"""/v2/accelerator_requests: create, list, show, bind, unbind and delete ARQs.

Reads go through the objects; every change is one conductor call, one
transaction; a bind answers 202 once the conductor has recorded it (or,
when the conductor's answer was lost, once the database shows it did).
Binding, unbinding, deleting an instance's ARQs and deleting a Bound ARQ
need a service token as well as the policy: they are Nova's calls.
Callers other than admins and the service role see only their project's
ARQs; the others answer 404.
"""

import http
import logging

import pecan
from pecan import rest

from cyborg import exception
from cyborg import objects
from cyborg import rpc
from cyborg.api import responses
from cyborg.api.schemas import arqs as arq_schemas
from cyborg.api.schemas import body as body_schemas
from cyborg.api.views import arqs as arq_views
from cyborg.common import vocabulary
from cyborg.objects import arq_binding
from cyborg.policies import arq as arq_policies

LOG = logging.getLogger(__name__)

SERVICE_TOKEN_REQUIRED = ('This operation requires a service token. Use the '  # noqa: S105
                          'Compute API to manage instance accelerators.')


def bind(conductor, context, bindings):
    """Have a conductor record ``bindings``; return once it has.

    A call left unanswered (``rpc.MessagingTimeout``: the request or its
    answer was lost or is late, as when the RabbitMQ node under the API's
    reply consumer stops) does not say whether the bind was recorded; the
    database does. Recorded, it is answered as the conductor's answer
    would have been. Not recorded yet, the call is sent once more: a
    repeat of a recorded bind changes nothing, so whichever of the two
    reaches a conductor first records it, and the second answer is the
    request's. Only when that one is lost too is the outcome unknown
    (503).

    :raises: what ``bind_arqs`` raises
    """
    try:
        conductor.bind_arqs(context, bindings)
        return
    except rpc.MessagingTimeout as error:
        if _recorded(context, bindings):
            LOG.warning('Bind of ARQs %s recorded although its answer was '
                        'lost (%s)', ', '.join(sorted(bindings)), error)
            return
    LOG.warning('Bind of ARQs %s not answered and not recorded; sending it '
                'again', ', '.join(sorted(bindings)))
    try:
        conductor.bind_arqs(context, bindings)
    except (rpc.MessagingTimeout, exception.Conflict):
        # The first call may have been carried out meanwhile, and its bind
        # may have ended already (BindFailed, which no bind starts from).
        if _recorded(context, bindings):
            return
        raise


def _recorded(context, bindings):
    """Whether every ARQ of ``bindings`` holds its binding in a state a
    bind left it in."""
    arqs = objects.ARQ.list(context, filters={'uuid': sorted(bindings)})
    return len(arqs) == len(bindings) and all(
        arq.state in vocabulary.ARQState.BIND_RECORDED
        and arq_binding.carries(arq, bindings[arq.uuid]) for arq in arqs)


class ARQsNotResolved(exception.CyborgException):
    """Some ARQs of the instance are still binding (or not bound yet)."""

    msg_fmt = ('ARQs of instance %(instance)s are not resolved yet: '
               '%(uuids)s')
    code = http.HTTPStatus.LOCKED


def require_service_token(context):
    """403 unless the request carried a valid service token."""
    if not context.has_service_token:
        raise exception.NotAuthorized(SERVICE_TOKEN_REQUIRED)


class ARQsController(rest.RestController):
    """GET, POST, PATCH, DELETE /v2/accelerator_requests[/{uuid}]."""

    @pecan.expose('json')
    def get_all(self, **params):
        """ARQs, optionally of one ``instance``; 423 with ``bind_state=resolved``
        while any of them is still to be resolved. ``bind_state=resolved``
        without ``instance`` lists only the resolved ARQs. From 2.6
        ``device_uuid`` / ``deployable_uuid``: the ARQs holding an attach
        handle of that device / deployable (or one below it).
        """
        request = pecan.request
        context = request.context
        context.can(arq_policies.LIST)
        query = arq_schemas.list_query(params, request.max_limit,
                                        request.version)
        project_id = arq_policies.owner_filter(context)
        filters = dict(query.filters)
        if project_id is not None:
            filters['project_id'] = project_id
        # Plain rows, not objects: the list only renders them.
        if 'bind_state' in query.extra and 'instance_uuid' in filters:
            arqs, unresolved = objects.ARQ.resolved_page(
                context, filters, query.paging(), project_id)
            if unresolved:
                raise ARQsNotResolved(instance=filters['instance_uuid'],
                                      uuids=', '.join(unresolved))
        else:
            if 'bind_state' in query.extra:
                # Without an instance: only the resolved ARQs, as upstream.
                filters['state'] = arq_schemas.RESOLVED_STATES
            arqs = objects.ARQ.list_rows(
                context, filters=filters, plain=True, **query.paging())
        return arq_views.collection(arqs, request.version, query, params,
                                    request.base_url)

    @pecan.expose('json')
    def get_one(self, uuid):
        """One ARQ, not wrapped."""
        request = pecan.request
        context = request.context
        context.can(arq_policies.SHOW)
        arq = objects.ARQ.get_by_uuid(context, uuid)
        project_id = arq_policies.owner_filter(context)
        if project_id is not None and arq.project_id != project_id:
            raise arq_policies.not_found(uuid)
        return arq_views.one(arq, request.version, request.base_url)

    @pecan.expose('json')
    def post(self):
        """Create the ARQs of a device profile, all Initial; 201 ``{"arqs": [...]}``."""
        request = pecan.request
        request.context.can(arq_policies.CREATE)
        name, group_id = arq_schemas.create_request(
            body_schemas.json_body(request))
        arqs = request.conductor.create_arqs(request.context, name, group_id)
        pecan.response.status = 201
        return arq_views.created(arqs, request.version, request.base_url)

    @pecan.expose(content_type='application/json')
    def patch(self, uuid=None):
        """Bind or unbind the ARQs of the document; 202, empty."""
        request = pecan.request
        context = request.context
        context.can(arq_policies.UPDATE)
        require_service_token(context)
        patch = arq_schemas.patch_request(body_schemas.json_body(request),
                                          request.version, uuid)
        arq_policies.check_project_ids(context, patch.bindings)
        if patch.unbinds:
            request.conductor.unbind_arqs(context, patch.unbinds)
        else:
            bind(request.conductor, context, patch.bindings)
        return responses.empty(202)

    @pecan.expose(content_type='application/json')
    def delete(self, uuid=None, **params):
        """Delete ``?arqs=u1,u2``, ``?instance=u`` or one ARQ by uuid; 204."""
        request = pecan.request
        context = request.context
        context.can(arq_policies.DELETE)
        arq_uuids, instance_uuid = arq_schemas.delete_request(uuid, params)
        if instance_uuid is not None:
            require_service_token(context)
        # Deleting a Bound ARQ by uuid needs a service token: the conductor
        # checks the states in its transaction.
        request.conductor.delete_arqs(context, arq_uuids=arq_uuids,
                                      instance_uuid=instance_uuid)
        pecan.response.status = 204
        return ''

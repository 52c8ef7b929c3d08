"""RequestContext: who is calling, what they may do, and their DB transaction.

A context is made at the API edge (``cyborg.api.hooks``) from the headers
keystonemiddleware (or the noauth middleware) set, travels over RPC with
every call, and is the object on which ``cyborg.db.api`` opens transactions.
"""

from oslo_context import context as oslo_context
from oslo_db.sqlalchemy import enginefacade


@enginefacade.transaction_context_provider
class RequestContext(oslo_context.RequestContext):
    """The caller of one request or RPC call.

    ``has_service_token`` says whether the request also carried a valid
    service token (as Nova sends with ``[service_user]``); some ARQ calls
    require one. It travels over RPC with the rest of the context.

    ``peer_object_versions`` is set on the context of an RPC call a
    server received: the object versions its caller reads (None when the
    caller did not say), which the server's answer is backported to.
    """

    def __init__(self, has_service_token=False, **kwargs):
        super().__init__(**kwargs)
        self.has_service_token = has_service_token
        self.peer_object_versions = None

    def to_dict(self):
        values = super().to_dict()
        values['has_service_token'] = self.has_service_token
        return values

    def can(self, rule, target=None, fatal=True):
        """Check ``rule`` against this caller; raise PolicyNotAuthorized when refused.

        ``target`` defaults to the caller's own project and user, so that
        ``project_id:%(project_id)s`` checks pass for the caller's project.
        """
        from cyborg import policies  # policies imports context; import late
        if target is None:
            target = {'project_id': self.project_id, 'user_id': self.user_id}
        return policies.authorize(self, rule, target, fatal=fatal)

    def check_is_admin(self):
        """Whether this caller passes the ``context_is_admin`` rule: what
        ``is_admin`` reads, once, when it was left undecided (None), as the
        API leaves it."""
        from cyborg import policies  # policies imports context; import late
        return policies.check_is_admin(self)

    def to_policy_values(self):
        values = super().to_policy_values()
        values['project_id'] = self.project_id
        return values

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault('has_service_token',
                          values.get('has_service_token', False))
        return super().from_dict(values, **kwargs)

    def elevated(self):
        """A copy of this context with the admin role, for internal work."""
        context = self.from_dict(self.to_dict())
        context.is_admin = True
        if 'admin' not in context.roles:
            context.roles = list(context.roles) + ['admin']
        return context


def get_admin_context():
    """A context for the services' own work (periodic tasks, start-up)."""
    return RequestContext(is_admin=True, roles=['admin'], overwrite=False)

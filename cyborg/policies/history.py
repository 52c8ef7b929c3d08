"""Who sees which entries of a device's or deployable's history.

The rules themselves are ``cyborg:device:history`` and
``cyborg:deployable:history`` (``policies/device.py``,
``policies/deployable.py``); once one passes, admins and the service role
(Nova) see every entry, anyone else only the entries of its own project's
ARQs (binds, unbinds and deletes; never a program or an enable).
"""

from cyborg.policies import base

# What a caller without a project is scoped to: no ARQ has it.
NO_PROJECT = ''


def arq_project_filter(context):
    """The project whose ARQs' entries ``context`` may see, or None for
    every entry."""
    if context.is_admin or context.can(base.SERVICE_ROLE, fatal=False):
        return None
    return context.project_id or NO_PROJECT

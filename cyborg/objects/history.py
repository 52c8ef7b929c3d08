"""The history of a device or a deployable, read for the API (GET
/v2/devices/{uuid}/history, /v2/deployables/{uuid}/history).

No versioned object: the entries only render and never cross RPC; the
conductor appends them (``cyborg.conductor.history``). The queries are
``cyborg.db.queries.history``.
"""

from cyborg.db.queries import history as history_queries

# The columns of each row read, in order.
FIELDS = history_queries.READ_COLUMNS


def of_device(context, uuid, arq_project_id=None, limit=None, marker=None):
    """One page of the history of device ``uuid``, newest first: rows of
    ``FIELDS``; with ``arq_project_id`` only the entries of that
    project's ARQs. Two statements.

    :raises: cyborg.exception.ResourceNotFound for an unknown device
    """
    return history_queries.page(context, device_uuid=uuid,
                                arq_project_id=arq_project_id, limit=limit,
                                marker=marker)


def of_deployable(context, uuid, arq_project_id=None, limit=None,
                  marker=None):
    """As ``of_device``, for deployable ``uuid``.

    :raises: cyborg.exception.ResourceNotFound for an unknown deployable
    """
    return history_queries.page(context, deployable_uuid=uuid,
                                arq_project_id=arq_project_id, limit=limit,
                                marker=marker)

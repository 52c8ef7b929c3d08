"""Keep Placement in step with the database, one host at a time.

Being written for issue 3 (inventory).
"""


def sync_host(context, placement, host):
    """Make ``host``'s provider tree in Placement match the database."""
    raise NotImplementedError('Placement sync lands with issue 3')

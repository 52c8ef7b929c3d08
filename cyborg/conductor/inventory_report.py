"""Apply an agent's full inventory report to the database, in one transaction.

Being written for issue 3 (inventory); see the brief of the engineer who
owns this module.
"""


def apply(context, host, devices):
    """Make the DB rows of ``host`` match ``devices`` (device_to_primitive dicts)."""
    raise NotImplementedError('inventory reports land with issue 3')

"""Attribute workflows of the conductor: create and delete, kept in Placement.

Being written for issue 3 (inventory).
"""


def create(context, placement, values):
    """Add an attribute to a deployable; return the Attribute."""
    raise NotImplementedError('attributes land with issue 3')


def delete(context, placement, attribute_uuid):
    """Delete an attribute."""
    raise NotImplementedError('attributes land with issue 3')

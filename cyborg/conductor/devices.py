"""Device workflows of the conductor: enabling and disabling a device.

Being written for issue 3 (inventory).
"""


def set_status(context, placement, device_uuid, status, reason):
    """Enable or disable (``maintaining``) a device; return the Device."""
    raise NotImplementedError('device status lands with issue 3')

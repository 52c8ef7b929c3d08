"""What ``plug`` returns for each accelerator (one dictionary each).

A PCI attach handle (``PCI``, or ``TEST_PCI`` of the fake driver) becomes
``{"pci_id": "dddd:bb:dd.f"}``, a mediated device (``MDEV``, a vGPU)
``{"mdev_uuid": "<uuid>"}``.
"""

from os_acc import exception

PCI_TYPES = ('PCI', 'TEST_PCI')
MDEV_TYPE = 'MDEV'
PCI_FIELDS = (('domain', 0xffff), ('bus', 0xff), ('device', 0x1f),
              ('function', 0x7))


def pci_id(attach_info):
    """The PCI address ``dddd:bb:dd.f`` of an attach handle's info (its
    ``domain``, ``bus``, ``device`` and ``function``, hexadecimal strings).

    :raises: OsAccError when the info is not a PCI address
    """
    numbers = []
    for name, largest in PCI_FIELDS:
        text = attach_info.get(name) if isinstance(attach_info, dict) else None
        try:
            number = int(text, 16)
        except (TypeError, ValueError):
            number = None
        if number is None or not 0 <= number <= largest:
            raise exception.OsAccError(
                'attach handle info %r has no PCI %s' % (attach_info, name))
        numbers.append(number)
    return '%04x:%02x:%02x.%x' % tuple(numbers)


def attachment(attach_type, attach_info):
    """The dictionary plug returns for one bound attach handle.

    :raises: OsAccError for a handle type os-acc cannot describe
    """
    if attach_type in PCI_TYPES:
        return {'pci_id': pci_id(attach_info)}
    if attach_type == MDEV_TYPE:
        mdev_uuid = (attach_info or {}).get('mdev_uuid')
        if not mdev_uuid:
            raise exception.OsAccError(
                'MDEV attach handle info %r has no mdev_uuid' % (attach_info,))
        return {'mdev_uuid': mdev_uuid}
    raise exception.OsAccError('attach handle type %r is not one os-acc '
                               'describes (%s or %s)' % (
                                   attach_type, ', '.join(PCI_TYPES),
                                   MDEV_TYPE))


def attachments(conductor_attachments):
    """The list plug returns, from the conductor's ``attachments``."""
    return [attachment(item['attach_type'], item['attach_info'])
            for item in conductor_attachments]

"""Inventory reports as an agent sends them, for the conductor's tests.

``fpga`` builds a card whose tree has every level a report can have,
``report`` turns devices into what the agent sends, and ``MALFORMED``
spoils a valid report in ways ``report_validation.validate`` refuses.
"""

from cyborg.agent.drivers import base as drivers


def pci(bus, function=0):
    """A PCI address as drivers report it in cpid_info and attach_info."""
    return {'domain': '0000', 'bus': '%02x' % bus, 'device': '00',
            'function': str(function)}


def fpga(bus, vfs=3, model='test-fpga', in_use=(), shell_version='1.0'):
    """A card on PCI bus ``bus``: PF root, one region, ``vfs`` VF deployables.

    The root has an ``rc`` but no accelerators, the region an ``rc`` and
    ``vfs`` accelerators (the only resource provider), each VF one
    accelerator and no ``rc``; VF ``n`` has attach handle function ``n``,
    in use when ``n`` is in ``in_use``.
    """
    name = 'fpga-0000:%02x:00.0' % bus
    vf_deployables = [
        drivers.DriverDeployable(
            name='%s-vf%d' % (name, number), num_accelerators=1,
            attributes={'function': 'vf%d' % number},
            attach_handles=[drivers.DriverAttachHandle(
                attach_type='PCI', attach_info=pci(bus, number),
                in_use=number in in_use)])
        for number in range(1, vfs + 1)]
    region = drivers.DriverDeployable(
        name=name + '-region0', num_accelerators=vfs,
        attributes={'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_TEST'},
        children=vf_deployables)
    root = drivers.DriverDeployable(
        name=name, num_accelerators=0,
        attributes={'rc': 'FPGA',
                    'shell': {'name': 'test-shell',
                              'version': shell_version}},
        children=[region])
    return drivers.DriverDevice(
        type='FPGA', vendor='0x8086', model=model,
        controlpath_id=drivers.DriverControlpathId(cpid_type='PCI',
                                                   cpid_info=pci(bus)),
        std_board_info={'device_id': '0x0b30', 'class': 'accelerator'},
        vendor_board_info={'shell': 'test-shell'},
        deployables=[root])


def report(*devices):
    """The primitives an agent sends for ``devices``."""
    return [drivers.device_to_primitive(device, 'test_driver')
            for device in devices]


def _bad_handle(primitive):
    region = primitive['deployables'][0]['children'][0]
    region['children'][0]['attach_handles'][0]['attach_type'] = 'USB'


def _missing_model(primitive):
    del primitive['model']


def _text_accelerators(primitive):
    primitive['deployables'][0]['num_accelerators'] = '4'


def _list_attribute(primitive):
    primitive['deployables'][0]['attributes']['ports'] = [1, 2]


def _bad_name(primitive):
    primitive['deployables'][0]['name'] = 'spaces are not allowed'


def _twice_named(primitive):
    region = primitive['deployables'][0]['children'][0]
    region['children'][1]['name'] = region['children'][0]['name']


# (spoil one device primitive in place, what the error says).
MALFORMED = [
    (_bad_handle, "attach_type 'USB' is not one of PCI, MDEV"),
    (_missing_model, "missing 'model'"),
    (_text_accelerators, "'num_accelerators' must be an integer"),
    (_list_attribute, "attribute 'ports' has a list value"),
    (_bad_name, 'a name is made of letters'),
    (_twice_named, 'reported twice on the host'),
]

# Whole reports that are not a list of devices.
NOT_REPORTS = (None, {'devices': []}, ['device'])

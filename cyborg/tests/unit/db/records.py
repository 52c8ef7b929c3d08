"""Builders of database records for the data-layer tests, through the objects.

Each ``make_<thing>(context, ..., **overrides)`` creates one valid row with
distinct values and returns its object.
"""

import itertools

from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from cyborg import objects

_numbers = itertools.count(1)


def make_device(context, **overrides):
    """A fake FPGA card on host ``compute-1``."""
    values = {'type': 'FPGA', 'vendor': '0xABCD', 'model': 'fake-model',
              'hostname': 'compute-1',
              'std_board_info': '{"device_id": "0xabcd"}'}
    values.update(overrides)
    device = objects.Device(**values)
    device.create(context)
    return device


def make_deployable(context, device, **overrides):
    """A deployable of ``device`` with four accelerators and its own RP uuid."""
    values = {'name': 'deployable-%d' % next(_numbers), 'device_id': device.id,
              'num_accelerators': 4, 'driver_name': 'fake_driver',
              'rp_uuid': uuidutils.generate_uuid()}
    values.update(overrides)
    deployable = objects.Deployable(**values)
    deployable.create(context)
    return deployable


def make_attribute(context, deployable, key='rc', value='FPGA', **overrides):
    """An attribute of ``deployable``."""
    attribute = objects.Attribute(deployable_id=deployable.id, key=key,
                                  value=value, **overrides)
    attribute.create(context)
    return attribute


def make_controlpath_id(context, device, **overrides):
    """A PCI control path of ``device``."""
    values = {'device_id': device.id, 'cpid_type': 'PCI',
              'cpid_info': jsonutils.dumps({'bus': '%02x' % next(_numbers)})}
    values.update(overrides)
    controlpath_id = objects.ControlpathID(**values)
    controlpath_id.create(context)
    return controlpath_id


def make_attach_handle(context, deployable, controlpath_id, **overrides):
    """A free TEST_PCI attach handle of ``deployable`` with a distinct function."""
    info = {'bus': '0c', 'device': '00', 'domain': '0000',
            'function': str(next(_numbers))}
    values = {'deployable_id': deployable.id, 'cpid_id': controlpath_id.id,
              'attach_type': 'TEST_PCI', 'attach_info': jsonutils.dumps(info),
              'in_use': False}
    values.update(overrides)
    attach_handle = objects.AttachHandle(**values)
    attach_handle.create(context)
    return attach_handle


def make_device_profile(context, **overrides):
    """A profile asking for one FPGA."""
    values = {'name': 'profile-%d' % next(_numbers),
              'description': 'one FPGA',
              'groups': [{'resources:FPGA': '1',
                          'trait:CUSTOM_FAKE_DEVICE': 'required'}]}
    values.update(overrides)
    device_profile = objects.DeviceProfile(**values)
    device_profile.create(context)
    return device_profile


def make_arq(context, device_profile, **overrides):
    """An Initial ARQ for group 0 of ``device_profile``."""
    values = {'device_profile_id': device_profile.id,
              'device_profile_group_id': 0, 'state': 'Initial'}
    values.update(overrides)
    arq = objects.ARQ(**values)
    arq.create(context)
    return arq


class DeviceTree:
    """A device with one deployable, an attribute, a control path and handles."""

    def __init__(self, context, handles=2, **device_overrides):
        self.device = make_device(context, **device_overrides)
        self.deployable = make_deployable(context, self.device)
        self.attribute = make_attribute(context, self.deployable)
        self.controlpath_id = make_controlpath_id(context, self.device)
        self.attach_handles = [
            make_attach_handle(context, self.deployable, self.controlpath_id)
            for _ in range(handles)]

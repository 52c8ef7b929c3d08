"""Nova's fake virt driver, recording the accelerators Nova hands it.

nova-compute of the Nova tests (started by nova_compute.py) runs with
``compute_driver = cyborg_fake_virt.RecordingFakeDriver``.
It is ``nova.virt.fake.FakeDriver`` (no hypervisor; it reports the trait
COMPUTE_ACCELERATORS, so Nova schedules servers with device profiles on
it), and each call that receives ``accel_info`` (spawn, reboot, power_on)
appends one JSON line to the file ``CYBORG_FAKE_VIRT_RECORD`` names:
``{"call": ..., "instance": ..., "accel_info": [ARQ, ...]}``, the ARQs
as Nova read them from cyborg. The tests read it to see what the driver was
given.
"""

import json
import os
import threading

from nova.virt import fake

RECORD_VARIABLE = 'CYBORG_FAKE_VIRT_RECORD'

_LOCK = threading.Lock()


def _record(call, instance, accel_info):
    path = os.environ.get(RECORD_VARIABLE)
    if not path:
        return
    line = json.dumps({'call': call, 'instance': instance.uuid,
                       'accel_info': list(accel_info or [])}, default=str)
    with _LOCK, open(path, 'a') as record:
        record.write(line + '\n')


class RecordingFakeDriver(fake.FakeDriver):
    """FakeDriver that records the ``accel_info`` of each call."""

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        _record('spawn', instance, accel_info)
        return super().spawn(context, instance, image_meta, injected_files,
                             admin_password, allocations,
                             network_info=network_info,
                             block_device_info=block_device_info,
                             power_on=power_on, accel_info=accel_info)

    def reboot(self, context, instance, network_info, reboot_type,
               block_device_info=None, bad_volumes_callback=None,
               accel_info=None, share_info=None):
        _record('reboot-%s' % reboot_type.lower(), instance, accel_info)
        return super().reboot(context, instance, network_info, reboot_type,
                              block_device_info=block_device_info,
                              bad_volumes_callback=bad_volumes_callback,
                              accel_info=accel_info, share_info=share_info)

    def power_on(self, context, instance, network_info,
                 block_device_info=None, accel_info=None, share_info=None):
        _record('power_on', instance, accel_info)
        return super().power_on(context, instance, network_info,
                                block_device_info=block_device_info,
                                accel_info=accel_info, share_info=share_info)

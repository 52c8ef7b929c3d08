"""A host of an OpenStack Cyborg deployment, as its services leave it.

``fill`` writes into an ``UpstreamDatabase`` what upstream's agent,
conductor and API would have recorded for one host: an FPGA on PCI bus 10
(one deployable named ``<host>_<pci address>`` as upstream's drivers name
it, two attach handles, one held by a Bound ARQ), a disabled GPU on bus 11
with a deployable tree, an NVMe device (a type this service does not
know), profiles (one whose groups this service cannot take), and ARQs in
several states, one of them on a profile deleted behind upstream's back.
The FPGA and GPU sit where this service's fake driver puts the first card
of each kind, so that its report finds the same devices.
"""

import datetime
import json
import uuid

CREATED = datetime.datetime(2025, 3, 4, 5, 6, 7)

# The resource classes and traits upstream's providers have.
FPGA_TRAITS = ('CUSTOM_FAKE_DEVICE', 'CUSTOM_FPGA_ARRIA10')
GPU_TRAITS = ('CUSTOM_NVIDIA_1EB8',)


def pci(bus, device='00', function='0'):
    return json.dumps({'domain': '0000', 'bus': bus, 'device': device,
                       'function': function})


def provider_uuid(name):
    """The uuid upstream's conductor gives the provider named ``name``."""
    return str(uuid.uuid3(uuid.NAMESPACE_DNS, name))


class Sample:
    """The uuids and names ``fill`` wrote, by role."""

    def __init__(self, host):
        self.host = host
        self.fpga_name = '%s_0000:10:00.0' % host
        self.gpu_name = '%s_0000:11:00.0_pgpu' % host
        self.fpga_rp = provider_uuid(self.fpga_name)
        self.gpu_rp = provider_uuid(self.gpu_name)
        self.uuids = {}

    def new(self, role):
        self.uuids[role] = str(uuid.uuid4())
        return self.uuids[role]


def fill(upstream, host='compute-1', third_type='NVME'):
    """Write the sample into ``upstream``; return its Sample.

    ``third_type``: the type of the device on bus 12 (NVMe, unknown here,
    by default; revisions before a35b4295a0e5 do not have it), or None
    for no third device.
    """
    sample = Sample(host)
    ids = {}
    _devices(upstream, sample, ids, third_type)
    _profiles(upstream, sample, ids)
    _arqs(upstream, sample, ids)
    return sample


def _row(upstream, sample, ids, role, table, **values):
    ids[role] = upstream.insert(table, uuid=sample.new(role),
                                created_at=CREATED, **values)
    return ids[role]


def _devices(upstream, sample, ids, third_type):
    host = sample.host
    for role, kind, bus, status in (('fpga', 'FPGA', '10', 'enabled'),
                                    ('gpu', 'GPU', '11', 'maintaining'),
                                    ('nvme', third_type, '12', 'enabled')):
        if kind is None:
            continue
        _row(upstream, sample, ids, role, 'devices', type=kind,
             vendor='0xABCD' if kind != 'GPU' else '0x10de',
             model='fake-%s' % kind.lower(), hostname=host, status=status,
             std_board_info='{"device_id": "0xCAFE"}',
             vendor_board_info='fake_vendor_info')
        _row(upstream, sample, ids, role + '_cpid', 'controlpath_ids',
             device_id=ids[role], cpid_type='PCI', cpid_info=pci(bus))
    _deployable(upstream, sample, ids, 'fpga_dep', 'fpga', sample.fpga_name,
                2, sample.fpga_rp)
    _attributes(upstream, sample, ids, 'fpga_dep', 'FPGA', FPGA_TRAITS)
    for number, in_use in ((0, True), (1, False)):
        _row(upstream, sample, ids, 'fpga_ah%d' % number, 'attach_handles',
             deployable_id=ids['fpga_dep'], cpid_id=ids['fpga_cpid'],
             in_use=in_use, attach_type='TEST_PCI',
             attach_info=pci('10', '01', str(number)))
    _deployable(upstream, sample, ids, 'gpu_root', 'gpu',
                '%s_0000:11:00.0' % sample.host, 0, None)
    _deployable(upstream, sample, ids, 'gpu_dep', 'gpu', sample.gpu_name, 1,
                sample.gpu_rp, parent='gpu_root')
    _attributes(upstream, sample, ids, 'gpu_dep', 'PGPU', GPU_TRAITS)
    _row(upstream, sample, ids, 'gpu_ah', 'attach_handles',
         deployable_id=ids['gpu_dep'], cpid_id=ids['gpu_cpid'], in_use=False,
         attach_type='TEST_PCI', attach_info=pci('11'))
    if third_type is None:
        return
    _deployable(upstream, sample, ids, 'nvme_dep', 'nvme',
                '%s_0000:12:00.0' % sample.host, 1,
                provider_uuid('%s_0000:12:00.0' % sample.host))
    _row(upstream, sample, ids, 'nvme_ah', 'attach_handles',
         deployable_id=ids['nvme_dep'], cpid_id=ids['nvme_cpid'],
         in_use=False, attach_type='PCI', attach_info=pci('12'))


def _deployable(upstream, sample, ids, role, device, name, accelerators,
                rp_uuid, parent=None):
    _row(upstream, sample, ids, role, 'deployables', name=name,
         num_accelerators=accelerators, device_id=ids[device],
         rp_uuid=rp_uuid, driver_name='fake',
         parent_id=ids.get(parent), root_id=ids.get(parent))


def _attributes(upstream, sample, ids, deployable, resource_class, traits):
    _row(upstream, sample, ids, deployable + '_rc', 'attributes',
         deployable_id=ids[deployable], key='rc', value=resource_class)
    for number, trait in enumerate(traits):
        _row(upstream, sample, ids, '%s_trait%d' % (deployable, number),
             'attributes', deployable_id=ids[deployable],
             key='trait%d' % number, value=trait)


def _profiles(upstream, sample, ids):
    for role, name, groups in (
            ('fpga_profile', 'fpga-1', [{'resources:FPGA': '1',
                                         'trait:CUSTOM_FAKE_DEVICE':
                                             'required'}]),
            ('gpu_profile', 'gpu-1', [{'resources:PGPU': '1'}]),
            ('bad_profile', 'bad-1', [{'resources:FPGA': None}]),
            ('gone_profile', 'gone-1', [{'resources:FPGA': '1'}])):
        _row(upstream, sample, ids, role, 'device_profiles', name=name,
             profile_json=json.dumps({'groups': groups}),
             description='the %s profile' % name)


def _arqs(upstream, sample, ids):
    def arq(role, state, profile, **values):
        _row(upstream, sample, ids, role, 'extended_accelerator_requests',
             state=state, device_profile_id=ids[profile],
             device_profile_group_id=0, substate='Initial',
             project_id='project-a', **values)

    arq('bound', 'Bound', 'fpga_profile', hostname=sample.host,
        device_rp_uuid=sample.fpga_rp, instance_uuid=sample.new('instance'),
        attach_handle_id=ids['fpga_ah0'], deployable_id=ids['fpga_dep'])
    arq('initial', 'Initial', 'fpga_profile')
    arq('failed', 'BindFailed', 'gpu_profile', hostname=sample.host,
        device_rp_uuid=sample.gpu_rp, instance_uuid=sample.new('instance2'))
    arq('unbound', 'Unbound', 'gpu_profile')
    arq('on_bad', 'Initial', 'bad_profile')
    arq('on_gone', 'Initial', 'gone_profile')
    upstream.execute(
        'SET FOREIGN_KEY_CHECKS = 0',
        'DELETE FROM device_profiles WHERE id = %d'  # noqa: S608
        % ids['gone_profile'],
        'SET FOREIGN_KEY_CHECKS = 1')

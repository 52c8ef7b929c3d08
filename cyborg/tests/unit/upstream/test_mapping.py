"""cyborg.upstream.mapping: which upstream rows are carried, and why not.

The rows are dicts as ``source.read`` returns them; the whole import
against real databases is tested in
cyborg/tests/functional/db/test_import_upstream.py.
"""

import datetime
import json

from cyborg.tests import base
from cyborg.upstream import mapping

CREATED = datetime.datetime(2025, 1, 2, 3, 4, 5)


def _row(row_id, **values):
    return dict(id=row_id, uuid='00000000-0000-0000-0000-%012d' % row_id,
                created_at=CREATED, updated_at=None, **values)


def _rows(arqs=(), profile_json=None, device_type='FPGA', key='rc'):
    """One device, deployable, handle, profile, and ``arqs``."""
    return {
        'devices': [_row(1, type=device_type, vendor='0xabcd', model='m',
                         std_board_info=None, vendor_board_info=None,
                         hostname='h', status='enabled')],
        'controlpath_ids': [_row(2, device_id=1, cpid_type='PCI',
                                 cpid_info='{"bus": "10"}')],
        'deployables': [_row(3, parent_id=None, root_id=None, name='h_dev',
                             num_accelerators=1, device_id=1,
                             rp_uuid='11111111-1111-1111-1111-111111111111',
                             driver_name='fake', bitstream_id=None)],
        'attributes': [_row(4, deployable_id=3, key=key, value='FPGA')],
        'attach_handles': [_row(5, deployable_id=3, cpid_id=2, in_use=None,
                                attach_type='PCI',
                                attach_info='{"bus": "10"}')],
        'device_profiles': [_row(6, name='p', description=None,
                                 profile_json=profile_json or json.dumps(
                                     {'groups': [{'resources:FPGA': '1'}]}))],
        'extended_accelerator_requests': list(arqs),
    }


def _arq(row_id, state='Initial', **values):
    defaults = dict(project_id='p', state=state, device_profile_id=6,
                    device_profile_group_id=0, hostname=None,
                    device_rp_uuid=None, instance_uuid=None,
                    attach_handle_id=None, deployable_id=None)
    defaults.update(values)
    return _row(row_id, **defaults)


class MappingTest(base.TestCase):

    def _reasons(self, plan):
        return {(skipped.table, skipped.uuid[-2:]): skipped.reason
                for skipped in plan.skipped}

    def test_everything_valid_is_carried(self):
        plan = mapping.plan(_rows(arqs=[_arq(7, 'Bound', attach_handle_id=5,
                                             deployable_id=3)]))
        self.assertEqual([], plan.skipped)
        (deployable,) = plan.rows['deployables']
        self.assertEqual(('h_dev', '11111111-1111-1111-1111-111111111111'),
                         (deployable.values['provider_name'],
                          deployable.values['rp_uuid']))
        (handle,) = plan.rows['attach_handles']
        self.assertIs(False, handle.values['in_use'])
        (profile,) = plan.rows['device_profiles']
        self.assertEqual([{'resources:FPGA': '1'}],
                         json.loads(profile.values['profile_json']))
        (arq,) = plan.rows['extended_accelerator_requests']
        self.assertEqual({'device_profile_id': ('device_profiles',
                                                profile.uuid),
                          'attach_handle_id': ('attach_handles', handle.uuid),
                          'deployable_id': ('deployables', deployable.uuid)},
                         arq.refs)
        self.assertEqual(CREATED, arq.values['created_at'])

    def test_arqs_that_cannot_be_carried(self):
        plan = mapping.plan(_rows(arqs=[
            _arq(10, 'Exploded'),
            _arq(11, device_profile_group_id=1),
            _arq(12, 'Bound'),
            _arq(13, device_profile_id=99),
            _arq(14, 'Bound', attach_handle_id=5),
            _arq(15, 'BindStarted', attach_handle_id=5)]))
        self.assertEqual({
            ('extended_accelerator_requests', '10'):
                "its state 'Exploded' is not one this service knows",
            ('extended_accelerator_requests', '11'):
                'its device_profile_group_id 1 is not a group of its '
                'profile',
            ('extended_accelerator_requests', '12'):
                'it is Bound but holds no attach handle',
            ('extended_accelerator_requests', '13'):
                'its device profile (upstream id 99) is gone',
            ('extended_accelerator_requests', '15'):
                'its attach handle (upstream id 5) is held by another ARQ '
                'already'}, self._reasons(plan))
        self.assertEqual(['00000000-0000-0000-0000-000000000014'],
                         [row.uuid for row in
                          plan.rows['extended_accelerator_requests']])

    def test_a_row_left_out_takes_what_is_below_it(self):
        plan = mapping.plan(_rows(device_type='MDEV', arqs=[
            _arq(7, 'Bound', attach_handle_id=5)]))
        reasons = self._reasons(plan)
        self.assertIn("its type 'MDEV'", reasons[('devices', '01')])
        self.assertEqual('its device (upstream id 1) is not carried over',
                         reasons[('deployables', '03')])
        self.assertEqual('its deployable (upstream id 3) is not carried over',
                         reasons[('attach_handles', '05')])
        self.assertEqual('its attach handle (upstream id 5) is not carried '
                         'over',
                         reasons[('extended_accelerator_requests', '07')])
        self.assertEqual([], plan.rows['deployables'])

    def test_profiles_and_values_that_do_not_fit(self):
        for profile_json, reason in (
                ('not json', 'its profile_json is not JSON'),
                ('{"groups": []}', 'its groups are not a list of '
                                   'string-to-string maps'),
                ('{"groups": [{"a": 1}]}', 'its groups are not a list of '
                                           'string-to-string maps')):
            plan = mapping.plan(_rows(profile_json=profile_json))
            self.assertEqual({('device_profiles', '06'): reason},
                             self._reasons(plan))
        plan = mapping.plan(_rows(key='k' * 256))
        self.assertEqual({('attributes', '04'):
                          'its key is longer than 255 characters'},
                         self._reasons(plan))

    def test_tree_written_parents_first(self):
        rows = _rows()
        rows['deployables'] = [
            _row(9, parent_id=8, root_id=3, name='leaf', num_accelerators=1,
                 device_id=1, rp_uuid=None, driver_name=None,
                 bitstream_id=None),
            _row(8, parent_id=3, root_id=3, name='mid', num_accelerators=0,
                 device_id=1, rp_uuid=None, driver_name=None,
                 bitstream_id=None)] + rows['deployables']
        plan = mapping.plan(rows)
        self.assertEqual(['h_dev', 'mid', 'leaf'],
                         [row.values['name']
                          for row in plan.rows['deployables']])
        self.assertIsNone(plan.rows['deployables'][2].values['provider_name'])

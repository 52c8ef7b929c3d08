"""Device objects on SQLite: create, get, update, destroy, and list paging."""

import datetime

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


class DeviceTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()

    def test_create_sets_database_fields(self):
        device = records.make_device(self.context)

        self.assertIsInstance(device.id, int)
        self.assertTrue(device.obj_attr_is_set('uuid'))
        self.assertEqual('enabled', device.status)
        self.assertIsNotNone(device.created_at)
        self.assertIsNone(device.updated_at)
        self.assertEqual(set(), device.obj_what_changed())

    def test_get_by_uuid_and_by_id(self):
        device = records.make_device(self.context, vendor='10de', type='GPU')

        by_uuid = objects.Device.get_by_uuid(self.context, device.uuid)
        by_id = objects.Device.get_by_id(self.context, device.id)

        self.assertEqual(device.as_dict(), by_uuid.as_dict())
        self.assertEqual(device.as_dict(), by_id.as_dict())
        self.assertEqual('GPU', by_uuid.type)

    def test_get_unknown_uuid_raises_not_found(self):
        error = self.assertRaises(
            exception.ResourceNotFound, objects.Device.get_by_uuid,
            self.context, '6a0c7a5e-9a55-4b47-8d35-3b1b5bdb9d8e')
        self.assertIn('6a0c7a5e-9a55-4b47-8d35-3b1b5bdb9d8e', str(error))

    def test_save_writes_changed_fields(self):
        device = records.make_device(self.context)
        device.status = 'maintaining'
        device.status_reason = 'firmware upgrade'

        device.save(self.context)

        stored = objects.Device.get_by_uuid(self.context, device.uuid)
        self.assertEqual('maintaining', stored.status)
        self.assertEqual('firmware upgrade', stored.status_reason)
        self.assertIsNotNone(stored.updated_at)
        self.assertEqual(set(), device.obj_what_changed())

    def test_destroy_removes_row(self):
        device = records.make_device(self.context)

        device.destroy(self.context)

        self.assertRaises(exception.ResourceNotFound,
                          objects.Device.get_by_uuid, self.context, device.uuid)
        self.assertRaises(exception.ResourceNotFound, device.destroy,
                          self.context)

    def test_invalid_type_is_refused_before_the_database(self):
        self.assertRaises(ValueError, objects.Device, type='TPU')


def _naive(value):
    """An aware datetime as naive UTC; any other value as it is."""
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def _as_text(value):
    """A datetime as a list row has it: the API's text, whole seconds
    (``cyborg.db.queries.rows.rendered``); any other value as it is."""
    if isinstance(value, datetime.datetime):
        return _naive(value).isoformat(timespec='seconds') + '+00:00'
    return value


class DeviceListTest(base.TestCase):
    """Filters, sort and pages of Device.list (the paging code all lists share)."""

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.devices = [
            records.make_device(self.context, hostname='host-b', type='FPGA',
                                status_reason=None),
            records.make_device(self.context, hostname='host-a', type='GPU',
                                status_reason='z'),
            records.make_device(self.context, hostname='host-c', type='FPGA',
                                status_reason='a'),
            records.make_device(self.context, hostname='host-a', type='FPGA',
                                status_reason=None),
        ]

    def _ids(self, devices):
        return [device.id for device in devices]

    def _list(self, **kwargs):
        return self._ids(objects.Device.list(self.context, **kwargs))

    def test_default_order_is_by_id(self):
        self.assertEqual(self._ids(self.devices), self._list())

    def test_exact_match_filters_combine(self):
        b, a, c, a2 = self.devices

        self.assertEqual([a.id, a2.id], self._list(filters={'hostname': 'host-a'}))
        self.assertEqual([a2.id], self._list(
            filters={'hostname': 'host-a', 'type': 'FPGA'}))
        self.assertEqual([], self._list(filters={'hostname': 'host'}))

    def test_list_filter_matches_any_member(self):
        b, a, c, a2 = self.devices

        self.assertEqual([b.id, c.id], self._list(
            filters={'uuid': [b.uuid, c.uuid]}))

    def test_none_filter_matches_null(self):
        b, a, c, a2 = self.devices

        self.assertEqual([b.id, a2.id],
                         self._list(filters={'status_reason': None}))

    def test_sort_by_column_then_id(self):
        b, a, c, a2 = self.devices

        self.assertEqual([a.id, a2.id, b.id, c.id],
                         self._list(sort_key='hostname'))
        self.assertEqual([c.id, b.id, a2.id, a.id],
                         self._list(sort_key='hostname', sort_dir='desc'))

    def test_nulls_sort_first_ascending_and_last_descending(self):
        b, a, c, a2 = self.devices

        self.assertEqual([b.id, a2.id, c.id, a.id],
                         self._list(sort_key='status_reason'))
        self.assertEqual([a.id, c.id, a2.id, b.id],
                         self._list(sort_key='status_reason', sort_dir='desc'))

    def test_pages_follow_the_marker(self):
        for sort_key in ('id', 'hostname', 'status_reason'):
            for sort_dir in ('asc', 'desc'):
                everything = self._list(sort_key=sort_key, sort_dir=sort_dir)
                pages, marker = [], None
                while True:
                    page = objects.Device.list(
                        self.context, limit=1, marker=marker,
                        sort_key=sort_key, sort_dir=sort_dir)
                    if not page:
                        break
                    pages.extend(self._ids(page))
                    marker = page[-1].uuid
                self.assertEqual(everything, pages, (sort_key, sort_dir))

    def test_limit_and_marker_with_filters(self):
        b, a, c, a2 = self.devices

        first = objects.Device.list(self.context, filters={'type': 'FPGA'},
                                    limit=2)
        rest = objects.Device.list(self.context, filters={'type': 'FPGA'},
                                   marker=first[-1].uuid)

        self.assertEqual([b.id, c.id], self._ids(first))
        self.assertEqual([a2.id], self._ids(rest))

    def test_unknown_marker_filter_sort_key_or_direction_is_invalid(self):
        for kwargs in ({'marker': '6a0c7a5e-9a55-4b47-8d35-3b1b5bdb9d8e'},
                       {'filters': {'colour': 'red'}},
                       {'sort_key': 'colour'},
                       {'sort_dir': 'sideways'}):
            self.assertRaises(exception.InvalidParameterValue,
                              objects.Device.list, self.context, **kwargs)

    def test_list_rows_is_the_same_page_as_rows(self):
        for kwargs in ({}, {'filters': {'type': 'FPGA'}, 'limit': 2},
                       {'sort_key': 'hostname', 'sort_dir': 'desc'},
                       {'marker': self.devices[1].uuid}):
            listed = objects.Device.list(self.context, **kwargs)
            rows = objects.Device.list_rows(self.context, **kwargs)
            # A row's timestamps are text, formatted by the database.
            self.assertEqual(
                [{name: _as_text(getattr(device, name))
                  for name in device.fields} for device in listed],
                [{name: getattr(row, name) for name in objects.Device.fields}
                 for row in rows], kwargs)
            self.assertFalse(any(isinstance(row, objects.Device)
                                 for row in rows))


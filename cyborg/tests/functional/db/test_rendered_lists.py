"""What the database renders for a list is what Python renders, on SQLite,
MariaDB and PostgreSQL.

List rows carry their timestamps as the API's text (``rows.rendered``; on
PostgreSQL as datetimes, which the answer's encoder writes as that text) and
a deployable's ``attributes_list`` as JSON text aggregated by the database
(``deployable_filters``, stored on the deployable's row by its refresh):
each backend formats and quotes them with its own functions, so each is
checked here against the text the API builds from an object.
"""

import datetime
import json

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.api import responses
from cyborg.api.views import device_profiles as profile_views
from cyborg.api.views import listing
from cyborg.db import models
from cyborg.db.queries import deployable_filters
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

# Text a JSON encoder must escape, text it need not, and a value past the
# Basic Multilingual Plane.
AWKWARD = ('quote " backslash \\ slash / tab \t newline \n é 😀 '
           'control \x01 \x1f')


def _answered(value):
    """``value`` as an answer's encoder writes it, read back."""
    return json.loads(responses.JsonRenderer(None, None).render(
        None, {'value': value}))['value']


class RenderedListsTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(self.context)

    def test_timestamps_are_the_text_of_the_objects(self):
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(models.Device).values(
                updated_at=datetime.datetime(2026, 11, 28, 23, 59, 59,
                                             999999)))
        profile = records.make_device_profile(self.context)

        row, = objects.Device.list_rows(self.context)
        device = objects.Device.get_by_uuid(self.context, self.device.uuid)
        profile_row, = objects.DeviceProfile.list_rows(self.context)

        self.assertEqual(_answered(listing.timestamp(device.created_at)),
                         _answered(listing.timestamp(row.created_at)))
        # Seconds are cut, not rounded, as Python's text of the datetime.
        self.assertEqual('2026-11-28T23:59:59+00:00',
                         _answered(listing.timestamp(row.updated_at)))
        self.assertEqual(
            profile_views.timestamp(profile.created_at),
            profile_row.created_at)
        self.assertEqual(' ', profile_row.created_at[10])
        self.assertIsNone(profile_row.updated_at)

    def test_profile_timestamps_are_cut_to_seconds_with_a_space(self):
        profile = records.make_device_profile(self.context)
        table = models.DeviceProfile.__table__
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(table).values(
                created_at=datetime.datetime(2026, 11, 28, 23, 59, 59,
                                             999999),
                updated_at=datetime.datetime(2026, 1, 2, 3, 4, 5)))

        row, = objects.DeviceProfile.list_rows(self.context)

        self.assertEqual(('2026-11-28 23:59:59+00:00',
                          '2026-01-02 03:04:05+00:00'),
                         (row.created_at, row.updated_at))
        stored = objects.DeviceProfile.get_by_uuid(self.context, profile.uuid)
        self.assertEqual(profile_views.timestamp(stored.created_at),
                         row.created_at)

    def test_attributes_list_is_the_json_of_the_attributes_in_order(self):
        deployable = records.make_deployable(self.context, self.device)
        empty = records.make_deployable(self.context, self.device)
        # Keys out of alphabetical order: creation order must win.
        for key, value in (('zeta', 'last letter'), ('alpha', None),
                           ('awkward', AWKWARD), ('mid', '')):
            records.make_attribute(self.context, deployable, key, value)

        found = dict(objects.Deployable.list_rows(self.context))
        texts = {row.uuid: text for row, text in found.items()}

        expected = [{'zeta': 'last letter'}, {'alpha': None},
                    {'awkward': AWKWARD}, {'mid': ''}]
        self.assertEqual(expected, json.loads(texts[deployable.uuid]))
        self.assertEqual('[]', texts[empty.uuid])
        # The object's field holds the same list.
        self.assertEqual(expected, objects.Deployable.get_by_uuid(
            self.context, deployable.uuid).attributes_list)
        # The separators of json.dumps, as upstream clients have seen them.
        self.assertTrue(texts[deployable.uuid].startswith(
            '[{"zeta": "last letter"}, {"alpha": null}, '))

    def test_stored_attributes_list_is_the_aggregate_after_a_refresh(self):
        deployable = records.make_deployable(self.context, self.device)
        empty = records.make_deployable(self.context, self.device)
        for key, value in (('zeta', 'last letter'), ('alpha', None),
                           ('awkward', AWKWARD), ('mid', '')):
            records.make_attribute(self.context, deployable, key, value)
        table = models.Deployable.__table__
        # Stale copies, as a bulk load that bypassed the writers leaves.
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(table).values(
                attributes_list='[]', has_nested_attributes=True,
                updated_at=table.c.updated_at))

        deployable_filters.refresh_attributes_list(
            self.context, [deployable.id, empty.id])

        with self.database.engine.connect() as connection:
            stored = {row[0]: tuple(row[1:]) for row in connection.execute(
                sa.select(table.c.id, table.c.attributes_list,
                          table.c.has_nested_attributes,
                          deployable_filters._attributes_text(table.c.id)))}
        text, nested, aggregate = stored[deployable.id]
        # Byte for byte the database's aggregate, which the lists showed.
        self.assertEqual(aggregate, text)
        self.assertFalse(nested)
        self.assertEqual([{'zeta': 'last letter'}, {'alpha': None},
                          {'awkward': AWKWARD}, {'mid': ''}],
                         json.loads(text))
        self.assertTrue(text.startswith(
            '[{"zeta": "last letter"}, {"alpha": null}, '))
        self.assertEqual((None, False, None),
                         (stored[empty.id][0], bool(stored[empty.id][1]),
                          stored[empty.id][2]))
        # The list shows the stored text, '[]' for none.
        texts = {row.uuid: listed for row, listed in
                 objects.Deployable.list_rows(self.context)}
        self.assertEqual({deployable.uuid: text, empty.uuid: '[]'}, texts)


class SQLiteRenderedListsTest(RenderedListsTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLRenderedListsTest(RenderedListsTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLRenderedListsTest(RenderedListsTestMixin, base.TestCase):
    backend = 'postgresql'

    def test_profile_timestamps_whatever_the_database_datestyle(self):
        # The profile list casts its timestamps to text, whose form is the
        # session's DateStyle: each connection sets ISO.
        name = self.database.engine.url.database
        with self.database.engine.connect() as connection:
            connection.execute(sa.text(
                "ALTER DATABASE %s SET DateStyle = 'SQL, DMY'" % name))
            connection.commit()
        # Connections opened from now on start with the database's setting.
        self.database.engine.dispose()
        with self.database.engine.connect() as connection:
            self.assertEqual('ISO, MDY', connection.exec_driver_sql(
                'SHOW DateStyle').scalar())
        self.test_profile_timestamps_are_cut_to_seconds_with_a_space()

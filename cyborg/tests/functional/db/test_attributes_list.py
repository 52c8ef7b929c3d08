"""Every writer of the attributes table keeps the deployables' stored
``attributes_list`` and ``has_nested_attributes`` in step, on SQLite,
MariaDB and PostgreSQL.

Lists read the two columns of ``deployables`` instead of aggregating the
attributes table (``cyborg.db.queries.deployable_filters``). After each
writer (the objects' and queries' create, update and destroy, an inventory
report's inserts, updates and deletions, the API's create and delete
through the conductor) every deployable's stored text and flag are
compared with what the database aggregates from the attributes table
then, and the deployable's ``updated_at`` is left as it was.
"""

import json

import sqlalchemy as sa
import webob

from cyborg.api import app
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg import policies
from cyborg.conductor import attributes as conductor_attributes
from cyborg.conductor import inventory_report
from cyborg.db import models
from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import deployable_filters
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.clients import recording
from cyborg.tests.unit.conductor import reports
from cyborg.tests.unit.db import records

Deployable = models.Deployable.__table__
HOST = 'compute-1'


class AttributesListTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()

    def stored(self):
        """{deployable id: (attributes_list, has_nested_attributes,
        the aggregate now, whether one is nested now, updated_at)}."""
        query = sa.select(
            Deployable.c.id, Deployable.c.attributes_list,
            Deployable.c.has_nested_attributes,
            deployable_filters._attributes_text(Deployable.c.id),
            deployable_filters._has_nested(Deployable.c.id),
            Deployable.c.updated_at)
        with self.database.engine.connect() as connection:
            return {row[0]: tuple(row[1:])
                    for row in connection.execute(query)}

    def assert_in_step(self, updated_at=None):
        """Every deployable's stored columns are the aggregate of now;
        return {id: stored attributes_list}. With ``updated_at`` (a dict
        as ``stored`` gives), each deployable's ``updated_at`` is as it
        was then."""
        found = self.stored()
        self.assertTrue(found)
        for deployable_id, (text, nested, aggregate, nested_now,
                            updated) in found.items():
            self.assertEqual(aggregate, text, deployable_id)
            self.assertEqual(bool(nested_now), bool(nested), deployable_id)
            if updated_at is not None and deployable_id in updated_at:
                self.assertEqual(updated_at[deployable_id][4], updated,
                                 deployable_id)
        return {deployable_id: row[0] for deployable_id, row in found.items()}

    def attributes_of(self, deployable_id):
        """The stored list of ``deployable_id`` as Python, [] for NULL."""
        text = self.stored()[deployable_id][0]
        return json.loads(text) if text is not None else []

    # The objects' and queries' writers.

    def test_objects_create_update_and_destroy(self):
        device = records.make_device(self.context, hostname=HOST)
        deployable = records.make_deployable(self.context, device)
        other = records.make_deployable(self.context, device)
        before = self.stored()
        self.assertEqual((None, False), (before[deployable.id][0],
                                         bool(before[deployable.id][1])))

        rc = records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        records.make_attribute(self.context, deployable, 'vendor', None)
        texts = self.assert_in_step(updated_at=before)
        self.assertEqual('[{"rc": "FPGA"}, {"vendor": null}]',
                         texts[deployable.id])
        self.assertIsNone(texts[other.id])

        rc.value = 'CUSTOM_FPGA'
        rc.save(self.context)
        self.assert_in_step(updated_at=before)
        self.assertEqual([{'rc': 'CUSTOM_FPGA'}, {'vendor': None}],
                         self.attributes_of(deployable.id))

        # Moved to another deployable: both change.
        rc.deployable_id = other.id
        rc.save(self.context)
        self.assert_in_step(updated_at=before)
        self.assertEqual([{'vendor': None}],
                         self.attributes_of(deployable.id))
        self.assertEqual([{'rc': 'CUSTOM_FPGA'}],
                         self.attributes_of(other.id))

        rc.destroy(self.context)
        texts = self.assert_in_step(updated_at=before)
        self.assertIsNone(texts[other.id])
        # The objects and the lists read the same attributes.
        self.assertEqual([{'vendor': None}], objects.Deployable.get_by_uuid(
            self.context, deployable.uuid).attributes_list)

    def test_destroying_a_parent_takes_its_nested_attributes_along(self):
        device = records.make_device(self.context, hostname=HOST)
        deployable = records.make_deployable(self.context, device)
        shell = records.make_attribute(self.context, deployable, 'shell',
                                       None)
        records.make_attribute(self.context, deployable, 'version', '1.0',
                               parent_attribute_id=shell.id)
        records.make_attribute(self.context, deployable, 'name', 'test',
                               parent_attribute_id=shell.id)
        records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        before = self.stored()
        self.assertTrue(before[deployable.id][1])
        self.assertEqual([{'shell': None}, {'version': '1.0'},
                          {'name': 'test'}, {'rc': 'FPGA'}],
                         self.attributes_of(deployable.id))

        attribute_queries.destroy(self.context, shell.uuid)

        self.assert_in_step(updated_at=before)
        self.assertFalse(self.stored()[deployable.id][1])
        self.assertEqual([{'rc': 'FPGA'}], self.attributes_of(deployable.id))
        self.assertRaises(exception.ResourceNotFound,
                          attribute_queries.destroy, self.context, shell.uuid)

    # Inventory reports.

    def test_reports_first_changed_and_removing_attributes(self):
        inventory_report.apply(self.context, HOST, reports.report(
            reports.fpga(0x5e, vfs=2), reports.fpga(0x5f, vfs=1)))
        texts = self.assert_in_step()
        by_name = {row['name']: row for row in self._deployables()}
        root = by_name['fpga-0000:5e:00.0']['id']
        region = by_name['fpga-0000:5e:00.0-region0']['id']
        self.assertEqual(
            [{'rc': 'FPGA'}, {'shell': None}, {'name': 'test-shell'},
             {'version': '1.0'}], json.loads(texts[root]))
        self.assertTrue(self.stored()[root][1])
        self.assertFalse(self.stored()[region][1])
        self.assertEqual([{'rc': 'FPGA'}, {'trait0': 'CUSTOM_FPGA_TEST'}],
                         json.loads(texts[region]))
        first = self.stored()

        # A nested value changes, an attribute goes, a VF (with its
        # attributes) goes, a new VF comes.
        changed = reports.fpga(0x5e, vfs=3, shell_version='2.0')
        del changed.deployables[0].children[0].attributes['trait0']
        changed.deployables[0].children[0].children.pop(0)
        inventory_report.apply(self.context, HOST, reports.report(
            changed, reports.fpga(0x5f, vfs=1)))
        texts = self.assert_in_step(updated_at={
            deployable_id: row for deployable_id, row in first.items()
            if deployable_id != region})
        self.assertEqual(
            [{'rc': 'FPGA'}, {'shell': None}, {'name': 'test-shell'},
             {'version': '2.0'}], json.loads(texts[root]))
        self.assertEqual([{'rc': 'FPGA'}], json.loads(texts[region]))
        by_name = {row['name']: row for row in self._deployables()}
        self.assertNotIn('fpga-0000:5e:00.0-vf1', by_name)
        self.assertEqual([{'function': 'vf3'}], json.loads(
            texts[by_name['fpga-0000:5e:00.0-vf3']['id']]))

        # The nested attributes go: the root has none nested any more.
        removed = reports.fpga(0x5e, vfs=3, shell_version='2.0')
        del removed.deployables[0].attributes['shell']
        inventory_report.apply(self.context, HOST, reports.report(
            removed, reports.fpga(0x5f, vfs=1)))
        texts = self.assert_in_step()
        self.assertEqual([{'rc': 'FPGA'}], json.loads(texts[root]))
        self.assertFalse(self.stored()[root][1])

        # An unchanged report leaves every row as it is.
        kept = self.stored()
        inventory_report.apply(self.context, HOST, reports.report(
            removed, reports.fpga(0x5f, vfs=1)))
        self.assertEqual(kept, self.stored())

    def _deployables(self):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Deployable)).mappings().all()

    # The API's writers, through the conductor.

    def test_conductor_create_and_delete(self):
        self.useFixture(placement_fixture.PlacementFixture())
        client = recording.RecordingClient(conf.CONF)
        inventory_report.apply(self.context, HOST, reports.report(
            reports.fpga(0x5e, vfs=1)))
        region = next(row for row in self._deployables()
                      if row['name'] == 'fpga-0000:5e:00.0-region0')
        before = self.stored()

        trait = conductor_attributes.create(
            self.context, client, {'deployable_id': region['id'],
                                   'key': 'trait1',
                                   'value': 'CUSTOM_FPGA_ACME'})
        vendor = conductor_attributes.create(
            self.context, client, {'deployable_id': region['id'],
                                   'key': 'vendor', 'value': 'acme'})
        self.assert_in_step(updated_at=before)
        self.assertEqual([{'rc': 'FPGA'}, {'trait0': 'CUSTOM_FPGA_TEST'},
                          {'trait1': 'CUSTOM_FPGA_ACME'}, {'vendor': 'acme'}],
                         self.attributes_of(region['id']))

        conductor_attributes.delete(self.context, client, trait.uuid)
        self.assert_in_step(updated_at=before)
        self.assertEqual([{'rc': 'FPGA'}, {'trait0': 'CUSTOM_FPGA_TEST'},
                          {'vendor': 'acme'}],
                         self.attributes_of(region['id']))
        # The list shows the stored text.
        [(row, text)] = objects.Deployable.list_rows(
            self.context, filters={'uuid': region['uuid']})
        self.assertEqual(self.stored()[region['id']][0], text)

        # A report keeps the operator's attribute, and the list in step.
        inventory_report.apply(self.context, HOST, reports.report(
            reports.fpga(0x5e, vfs=1, shell_version='3.0')))
        self.assert_in_step()
        conductor_attributes.delete(self.context, client, vendor.uuid)
        self.assertEqual([{'rc': 'FPGA'}, {'trait0': 'CUSTOM_FPGA_TEST'}],
                         self.attributes_of(region['id']))
        self.assert_in_step()


    # What the API shows: neither column, nor a sort or filter on them.

    def _get(self, application, path):
        return webob.Request.blank(path, headers={
            'OpenStack-API-Version': 'accelerator 2.4'}).get_response(
                application)

    def test_the_api_neither_shows_nor_sorts_on_the_copies(self):
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        application = app.setup_app()
        device = records.make_device(self.context, hostname=HOST)
        deployable = records.make_deployable(self.context, device)
        records.make_attribute(self.context, deployable, 'rc', 'FPGA')

        listed = self._get(application, '/v2/deployables')
        shown = self._get(application, '/v2/deployables/' + deployable.uuid)

        self.assertEqual(200, listed.status_int, listed.text)
        self.assertEqual([shown.json_body], listed.json_body['deployables'])
        self.assertEqual('[{"rc": "FPGA"}]',
                         shown.json_body['attributes_list'])
        self.assertNotIn('has_nested_attributes', shown.json_body)
        for query in ('sort_key=attributes_list',
                      'sort_key=has_nested_attributes',
                      'attributes_list=x', 'has_nested_attributes=true'):
            response = self._get(application, '/v2/deployables?' + query)
            self.assertEqual(400, response.status_int, query)
        for name in models.DEPLOYABLE_DERIVED_COLUMNS:
            self.assertRaises(exception.InvalidParameterValue,
                              objects.Deployable.list_rows, self.context,
                              sort_key=name)
            self.assertRaises(exception.InvalidParameterValue,
                              objects.Deployable.list, self.context,
                              filters={name: None})
        # The object's attributes_list is its own field (the list, read
        # from the attributes), not the stored text.
        self.assertNotIn('has_nested_attributes', objects.Deployable.fields)
        self.assertEqual([{'rc': 'FPGA'}], objects.Deployable.get_by_uuid(
            self.context, deployable.uuid).attributes_list)


class SQLiteAttributesListTest(AttributesListTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLAttributesListTest(AttributesListTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLAttributesListTest(AttributesListTestMixin, base.TestCase):
    backend = 'postgresql'

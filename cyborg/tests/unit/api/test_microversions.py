"""Parsing of OpenStack-API-Version and the feature predicates."""

import microversion_parse

from cyborg.api import microversions
from cyborg import exception
from cyborg.tests import base

RANGE = 'The supported version range is: [2.0, 2.6].'


def version(text):
    major, minor = text.split('.')
    return microversion_parse.Version(int(major), int(minor))


class TestParse(base.TestCase):

    def assertNotAcceptable(self, header_value, message):
        error = self.assertRaises(exception.NotAcceptable,
                                  microversions.parse, header_value)
        self.assertEqual(406, error.code)
        self.assertEqual(message, str(error))

    def test_absent_header_is_the_minimum(self):
        self.assertEqual(version('2.0'), microversions.parse(None))
        self.assertEqual(version('2.0'), microversions.parse(''))

    def test_service_type_and_version(self):
        self.assertEqual(version('2.3'),
                         microversions.parse('accelerator 2.3'))
        self.assertEqual(version('2.1'),
                         microversions.parse('  ACCELERATOR   2.1 '))

    def test_bare_version(self):
        self.assertEqual(version('2.2'), microversions.parse('2.2'))

    def test_latest_is_the_maximum(self):
        for value in ('latest', 'accelerator latest', 'Latest'):
            self.assertEqual(version('2.6'), microversions.parse(value))

    def test_other_services_are_ignored(self):
        self.assertEqual(version('2.0'), microversions.parse('compute 2.90'))
        self.assertEqual(version('2.1'), microversions.parse(
            'compute 2.90, accelerator 2.1, placement 1.39'))

    def test_minor_above_maximum(self):
        self.assertNotAcceptable(
            'accelerator 2.7',
            'Version 2.7 was requested but the minor version is not '
            'supported by this service. ' + RANGE)
        self.assertNotAcceptable(
            '2.10',
            'Version 2.10 was requested but the minor version is not '
            'supported by this service. ' + RANGE)

    def test_other_major(self):
        for value in ('3.0', '1.0', 'accelerator 0.9'):
            requested = value.split()[-1]
            self.assertNotAcceptable(
                value,
                'Mutually exclusive versions requested. Version %s '
                'requested but not supported by this service. %s'
                % (requested, RANGE))

    def test_unparseable(self):
        for value in ('10', 'accelerator abc', '2.x', '2.3.1', '-2.1',
                      'accelerator 2.1 extra', 'accelerator'):
            self.assertNotAcceptable(
                value, 'Invalid value for OpenStack-API-Version header')


class TestPredicates(base.TestCase):

    def test_project_id_in_bind_from_2_1(self):
        self.assertFalse(microversions.supports_project_id_in_bind(
            version('2.0')))
        self.assertTrue(microversions.supports_project_id_in_bind(
            version('2.1')))
        self.assertTrue(microversions.supports_project_id_in_bind(
            version('2.3')))

    def test_device_profile_by_name_from_2_2(self):
        self.assertFalse(microversions.supports_device_profile_by_name(
            version('2.1')))
        self.assertTrue(microversions.supports_device_profile_by_name(
            version('2.2')))

    def test_device_status_from_2_3(self):
        self.assertFalse(microversions.supports_device_status(
            version('2.2')))
        self.assertTrue(microversions.supports_device_status(
            version('2.3')))

    def test_fpga_tree_queries_from_2_4(self):
        for predicate in (microversions.supports_nested_attributes,
                          microversions.supports_deployable_attribute_paths,
                          microversions.supports_deployable_tree_links,
                          microversions.supports_programmed_filter):
            self.assertFalse(predicate(version('2.3')), predicate.__name__)
            self.assertTrue(predicate(version('2.4')), predicate.__name__)

    def test_history_from_2_5(self):
        self.assertFalse(microversions.supports_history(version('2.4')))
        self.assertTrue(microversions.supports_history(version('2.5')))


class TestResponseHeaders(base.TestCase):

    def test_negotiated_version(self):
        self.assertEqual({
            'OpenStack-API-Minimum-Version': '2.0',
            'OpenStack-API-Maximum-Version': '2.6',
            'OpenStack-API-Version': 'accelerator 2.2',
            'Vary': 'OpenStack-API-Version',
        }, microversions.response_headers(version('2.2')))

    def test_no_version_for_a_refused_request(self):
        self.assertEqual({
            'OpenStack-API-Minimum-Version': '2.0',
            'OpenStack-API-Maximum-Version': '2.6',
            'Vary': 'OpenStack-API-Version',
        }, microversions.response_headers(None))

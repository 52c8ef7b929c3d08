"""report_validation.validate: what an agent's report must be to be written.

No database here: ``test_inventory_report`` checks that a report refused
here writes nothing.
"""

from cyborg import exception
from cyborg.agent.drivers import base as drivers
from cyborg.conductor import report_validation
from cyborg.tests import base
from cyborg.tests.unit.conductor import reports


def deep_deployable(levels):
    """A chain of ``levels`` deployables, each the only child of the last."""
    child = None
    for level in reversed(range(levels)):
        child = drivers.DriverDeployable(
            name='level%d' % level, num_accelerators=0,
            children=[child] if child is not None else [])
    return child


class TestValidReports(base.TestCase):

    def test_report_becomes_reported_objects_in_canonical_form(self):
        [device] = report_validation.validate(
            'compute-1', reports.report(reports.fpga(0x5e, vfs=2,
                                                     in_use={2})))

        self.assertEqual(
            ('FPGA', '0x8086', 'test-fpga', 'test_driver'),
            (device.type, device.vendor, device.model, device.driver_name))
        self.assertEqual(
            ('PCI', '{"bus":"5e","device":"00","domain":"0000",'
                    '"function":"0"}'), device.identity)
        self.assertEqual('{"class":"accelerator","device_id":"0x0b30"}',
                         device.std_board_info)
        [root] = device.deployables
        [region] = root.children
        self.assertEqual(['fpga-0000:5e:00.0-vf1', 'fpga-0000:5e:00.0-vf2'],
                         [vf.name for vf in region.children])
        # Only the region has accelerators and an rc.
        self.assertEqual([False, True, False, False],
                         [deployable.offers_accelerators() for deployable in
                          [root, region] + region.children])
        [shell] = [attribute for attribute in root.attributes
                   if attribute.key == 'shell']
        self.assertIsNone(shell.value)
        self.assertEqual({('name', 'test-shell'), ('version', '1.0')},
                         {(child.key, child.value)
                          for child in shell.children})
        self.assertEqual(
            [('PCI', report_validation.canonical_json(reports.pci(0x5e, 1)),
              False),
             ('PCI', report_validation.canonical_json(reports.pci(0x5e, 2)),
              True)],
            [(handle.attach_type, handle.attach_info, handle.in_use)
             for vf in region.children for handle in vf.attach_handles])

    def test_key_order_does_not_change_the_identity(self):
        [primitive] = reports.report(reports.fpga(0x5e))
        primitive['controlpath_id']['cpid_info'] = dict(reversed(
            list(primitive['controlpath_id']['cpid_info'].items())))

        [device] = report_validation.validate('compute-1', [primitive])

        self.assertEqual(report_validation.canonical_json(reports.pci(0x5e)),
                         device.cpid_info)

    def test_numbers_and_booleans_become_json_text(self):
        [primitive] = reports.report(reports.fpga(0x5e))
        primitive['deployables'][0]['attributes'].update(
            {'ports': 2, 'secure': True, 'clock': 1.5, 'unset': None})

        [device] = report_validation.validate('compute-1', [primitive])

        values = {attribute.key: attribute.value
                  for attribute in device.deployables[0].attributes}
        self.assertEqual(('2', 'true', '1.5', None),
                         (values['ports'], values['secure'], values['clock'],
                          values['unset']))

    def test_empty_report_is_valid(self):
        self.assertEqual([], report_validation.validate('compute-1', []))

    def test_deepest_allowed_trees_are_valid(self):
        device = reports.fpga(0x5e, vfs=0)
        device.deployables = [deep_deployable(
            report_validation.MAX_DEPLOYABLE_DEPTH)]
        [primitive] = reports.report(device)
        attributes = {'leaf': 'x'}
        for _ in range(report_validation.MAX_ATTRIBUTE_DEPTH - 1):
            attributes = {'nested': attributes}
        primitive['deployables'][0]['attributes'] = attributes

        [reported] = report_validation.validate('compute-1', [primitive])

        self.assertEqual('level0', reported.deployables[0].name)


class TestMalformedReports(base.TestCase):

    def assertRefused(self, devices, problem, host='compute-1'):
        error = self.assertRaises(exception.Invalid,
                                  report_validation.validate, host, devices)
        self.assertIn(problem, str(error))
        self.assertIn(host, str(error))

    def test_each_malformed_device_is_refused_naming_the_problem(self):
        for spoil, problem in reports.MALFORMED:
            # The valid device first: the whole report is refused.
            devices = reports.report(reports.fpga(0x60, vfs=1),
                                     reports.fpga(0x5e, vfs=5))
            spoil(devices[1])

            self.assertRefused(devices, problem)

    def test_what_is_not_a_list_of_devices_is_refused(self):
        for not_a_report in reports.NOT_REPORTS:
            self.assertRaises(exception.Invalid, report_validation.validate,
                              'compute-1', not_a_report)

    def test_a_report_needs_a_host_name(self):
        for host in ('', None, 7):
            error = self.assertRaises(exception.Invalid,
                                      report_validation.validate, host, [])
            self.assertIn('without a host name', str(error))

    def test_the_same_device_twice_is_refused(self):
        devices = reports.report(reports.fpga(0x5e), reports.fpga(0x5e))

        self.assertRefused(devices,
                           'the same controlpath_id is reported twice')

    def test_too_long_and_empty_texts_are_refused(self):
        [too_long] = reports.report(reports.fpga(0x5e))
        too_long['model'] = 'x' * (report_validation.STRING_LIMITS['model']
                                   + 1)
        self.assertRefused([too_long], "'model' is longer than 255 characters")

        [empty] = reports.report(reports.fpga(0x5e))
        empty['vendor'] = ''
        self.assertRefused([empty], "'vendor' is empty")

    def test_trees_deeper_than_the_limits_are_refused(self):
        device = reports.fpga(0x5e, vfs=0)
        device.deployables = [deep_deployable(
            report_validation.MAX_DEPLOYABLE_DEPTH + 1)]
        self.assertRefused(reports.report(device),
                           'deployables nest deeper than 6 levels')

        [primitive] = reports.report(reports.fpga(0x5e))
        attributes = {'leaf': 'x'}
        for _ in range(report_validation.MAX_ATTRIBUTE_DEPTH):
            attributes = {'nested': attributes}
        primitive['deployables'][0]['attributes'] = attributes
        self.assertRefused([primitive], 'attributes nest deeper than 4 levels')

    def test_bad_numbers_of_accelerators_are_refused(self):
        for value, problem in ((-1, "'num_accelerators' is negative"),
                               (True, "'num_accelerators' must be an "
                                      "integer")):
            [primitive] = reports.report(reports.fpga(0x5e))
            primitive['deployables'][0]['num_accelerators'] = value
            self.assertRefused([primitive], problem)

    def test_attach_info_maps_text_to_text(self):
        [primitive] = reports.report(reports.fpga(0x5e, vfs=1))
        vf = primitive['deployables'][0]['children'][0]['children'][0]
        vf['attach_handles'][0]['attach_info']['function'] = 1

        self.assertRefused([primitive],
                           'attach_info must map strings to strings')

    def test_the_same_attach_handle_twice_is_refused(self):
        [primitive] = reports.report(reports.fpga(0x5e, vfs=1))
        vf = primitive['deployables'][0]['children'][0]['children'][0]
        vf['attach_handles'].append(dict(vf['attach_handles'][0]))

        self.assertRefused([primitive], 'an attach handle is reported twice')

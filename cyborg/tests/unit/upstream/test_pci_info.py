"""PCI addresses of imported rows in the form this service's drivers write."""

import json

from cyborg.tests import base
from cyborg.upstream import mapping


def info(**fields):
    return json.dumps(fields)


class TestPciInfo(base.TestCase):

    def test_upstream_fake_drivers_unpadded_device_is_padded(self):
        # Upstream's fake driver: handle 9 is device "1", function "1".
        self.assertEqual(
            {'domain': '0000', 'bus': '0c', 'device': '01', 'function': '1'},
            json.loads(mapping.pci_info(info(domain='0000', bus='0c',
                                             device='1', function='1'))))

    def test_the_same_address_gives_the_same_text(self):
        self.assertEqual(
            mapping.pci_info(info(domain='0000', bus='0C', device='00',
                                  function='0')),
            mapping.pci_info(info(function='0', device='0', bus='c',
                                  domain='0')))

    def test_anything_else_is_carried_as_it_is(self):
        for text in ('not json', '[1, 2]', info(address='0000:0c:00.1'),
                     info(domain='0000', bus='0c', device='zz', function='1'),
                     info(domain='0000', bus='0c', device='20', function='9'),
                     info(domain='0000', bus='100', device='00',
                          function='0'),
                     None):
            self.assertEqual(text, mapping.pci_info(text))

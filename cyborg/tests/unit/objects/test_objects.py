"""Object fingerprints: a field change without a version bump fails here.

When a test here fails, bump the object's VERSION (and note why in its
version history comment), then copy the new fingerprint into EXPECTED.
"""

from oslo_versionedobjects import fixture

from cyborg.objects import base as objects_base
from cyborg.tests import base

EXPECTED = {
    'AttachHandle': '1.0-10e977f573cb8c0418966e3788f373b6',
    'Attribute': '1.0-663488f6b2c241eb43fc18be031473da',
    'ControlpathID': '1.0-c863c26326b8e90b32dcf08ba099321c',
    'Deployable': '1.1-fe31b58d703e3a409197a76a4de93242',
    'Device': '1.1-a5b76cd10b6b5f0422cdaf48d7f90e3b',
    'DeviceProfile': '1.0-4726c819bbc8d212f24e8eb9b6c67bb8',
    'ARQ': '1.1-dc0f42436157c20cc60d73344f1d1682',
    'Service': '1.0-fc0c0c61d5f2085b7b4d9b98691969ed',
}


class ObjectVersionTest(base.TestCase):

    def _checker(self):
        return fixture.ObjectVersionChecker(
            objects_base.CyborgObjectRegistry.obj_classes())

    def test_fingerprints_match_versions(self):
        expected, actual = self._checker().test_hashes(EXPECTED)

        self.assertEqual(expected, actual,
                         'Fields changed: bump VERSION and update EXPECTED')

    def test_every_registered_object_has_a_fingerprint(self):
        self.assertEqual(set(EXPECTED), set(self._checker().get_hashes()))

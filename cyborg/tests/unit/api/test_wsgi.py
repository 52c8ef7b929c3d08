"""Which config files the WSGI entry point reads."""

from unittest import mock

from cyborg.tests import base
from cyborg.wsgi import api


class TestConfigFiles(base.TestCase):

    def test_files_from_the_environment_separated_by_semicolons(self):
        self.assertEqual(
            ['/etc/cyborg/cyborg.conf', '/etc/cyborg/api.conf'],
            api.config_files({'OS_CYBORG_CONFIG_FILES':
                              '/etc/cyborg/cyborg.conf; /etc/cyborg/api.conf;'}))

    def test_default_file_when_it_exists(self):
        with mock.patch('os.path.exists', return_value=True) as exists:
            self.assertEqual(['/etc/cyborg/cyborg.conf'],
                             api.config_files({}))
        exists.assert_called_once_with('/etc/cyborg/cyborg.conf')

    def test_no_file_when_the_default_is_missing(self):
        with mock.patch('os.path.exists', return_value=False):
            self.assertEqual([], api.config_files({}))

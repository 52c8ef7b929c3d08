"""Writes a recorded sysfs tree (fixtures/*.yaml) into a temporary directory.

Symlinks are awkward in git, so a fixture describes a host compactly and
``SysfsTree`` lays it out as the kernel does: each PCI function a directory
under ``devices/pci<domain>:<bus>/`` with one file per attribute (value and
a newline), ``bus/pci/devices/<address>`` links to it, ``virtfn<N>`` and
``physfn`` link functions to each other and ``class/<class>/<name>`` links
to a directory below a function. The format:

    pci:  # addresses quoted: YAML 1.1 reads 0000:00:00.0 as a number
      <address>:
        files: {<relative path>: <content>, ...}
        directories: [<relative path>, ...]
        virtfns: [<address>, ...]
    classes: {<class>/<name>: <address>/<relative path>}
    files: {<path below the root>: <content>}
"""

import os

import fixtures
import yaml

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')


def load(name):
    """The description recorded in fixtures/<name>.yaml."""
    with open(os.path.join(FIXTURES, name + '.yaml'), encoding='utf-8') as f:
        return yaml.safe_load(f) or {}


def function_directory(address):
    """Where the function at ``address`` lives, relative to the root."""
    domain, bus, _ = address.split(':')
    return os.path.join('devices', 'pci%s:%s' % (domain, bus), address)


class SysfsTree(fixtures.Fixture):
    """A temporary sysfs root holding ``description``; its path is .root."""

    def __init__(self, description):
        super().__init__()
        self.description = description

    def _setUp(self):
        self.root = self.useFixture(fixtures.TempDir()).path
        pci = self.description.get('pci') or {}
        for address, function in pci.items():
            self.add_function(address, function or {})
        for address, function in pci.items():
            for index, vf in enumerate((function or {}).get('virtfns', [])):
                self.link(os.path.join(function_directory(address),
                                        'virtfn%d' % index),
                           function_directory(vf))
                self.link(os.path.join(function_directory(vf), 'physfn'),
                           function_directory(address))
        for name, target in (self.description.get('classes') or {}).items():
            address, _, below = target.partition('/')
            self.link(os.path.join('class', name),
                       os.path.join(function_directory(address), below))
        for path, content in (self.description.get('files') or {}).items():
            self.write(path, content)

    def add_function(self, address, function):
        """Lay out the PCI function ``address`` described by ``function``."""
        directory = function_directory(address)
        os.makedirs(os.path.join(self.root, directory), exist_ok=True)
        self.link(os.path.join('bus', 'pci', 'devices', address), directory)
        for path, content in (function.get('files') or {}).items():
            self.write(os.path.join(directory, path), content)
        for path in function.get('directories') or []:
            os.makedirs(os.path.join(self.root, directory, path),
                        exist_ok=True)

    def link(self, path, target):
        """A relative symlink at ``path`` to ``target`` (both below the
        root), as sysfs makes them."""
        full_path = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full_path), exist_ok=True)
        os.symlink(os.path.relpath(os.path.join(self.root, target),
                                   os.path.dirname(full_path)), full_path)

    def write(self, path, content):
        """Write ``content`` (a newline added) at ``path`` below the root."""
        full_path = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full_path), exist_ok=True)
        text = str(content)
        if not text.endswith('\n'):
            text += '\n'
        with open(full_path, 'w', encoding='ascii') as stream:
            stream.write(text)

    def remove(self, path):
        """Remove the file at ``path`` below the root."""
        os.remove(os.path.join(self.root, path))

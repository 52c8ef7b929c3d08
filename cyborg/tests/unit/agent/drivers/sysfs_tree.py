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

A function's vGPU types (``mdev_supported_types/<type>``) get the kernel's
``create`` file. The tree also stands in for the kernel's mediated device
core: ``add_mdev`` lays out a mediated device as the kernel does, and
``act_on_mdev_writes`` does what the kernel does when a driver writes a
uuid to ``create`` or ``1`` to a device's ``remove``. A type with no
available instance refuses writes to ``create`` (ENOSPC).
"""

import os
import shutil

import fixtures
import yaml

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')
MDEV_TYPES = 'mdev_supported_types'
MDEV_DEVICES = os.path.join('bus', 'mdev', 'devices')
# Writes to it fail with ENOSPC: a create file refusing new devices.
REFUSING_FILE = '/dev/full'


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
        types = os.path.join(self.root, directory, MDEV_TYPES)
        if os.path.isdir(types):
            for type_id in os.listdir(types):
                self._update_create_file(address, type_id)

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

    # The kernel's mediated device core.

    def type_directory(self, address, type_id):
        """The directory of vGPU type ``type_id`` of the function at
        ``address``, relative to the root."""
        return os.path.join(function_directory(address), MDEV_TYPES, type_id)

    def add_mdev(self, address, type_id, mdev_uuid):
        """Create mediated device ``mdev_uuid`` of ``type_id`` on the
        function at ``address`` as the kernel does.

        Its directory below the function holds a ``remove`` file and an
        ``mdev_type`` link to its type; ``bus/mdev/devices/<uuid>`` and the
        type's ``devices/<uuid>`` link to it; the type has one available
        instance fewer.
        """
        type_directory = self.type_directory(address, type_id)
        device = os.path.join(function_directory(address), mdev_uuid)
        os.makedirs(os.path.join(self.root, device))
        open(os.path.join(self.root, device, 'remove'), 'w').close()
        self.link(os.path.join(device, 'mdev_type'), type_directory)
        self.link(os.path.join(MDEV_DEVICES, mdev_uuid), device)
        self.link(os.path.join(type_directory, 'devices', mdev_uuid), device)
        self._add_available(address, type_id, -1)

    def remove_mdev(self, mdev_uuid):
        """Remove mediated device ``mdev_uuid`` as the kernel does: undo
        ``add_mdev``."""
        link = os.path.join(self.root, MDEV_DEVICES, mdev_uuid)
        device = os.path.realpath(link)
        type_directory = os.path.realpath(os.path.join(device, 'mdev_type'))
        address = os.path.basename(os.path.dirname(device))
        os.remove(os.path.join(type_directory, 'devices', mdev_uuid))
        os.remove(link)
        shutil.rmtree(device)
        self._add_available(address, os.path.basename(type_directory), 1)

    def mdevs(self):
        """{uuid: (parent address, type id)} of the mediated devices in
        ``bus/mdev/devices``."""
        found = {}
        directory = os.path.join(self.root, MDEV_DEVICES)
        for mdev_uuid in sorted(os.listdir(directory)
                                if os.path.isdir(directory) else []):
            device = os.path.realpath(os.path.join(directory, mdev_uuid))
            type_id = os.path.basename(
                os.readlink(os.path.join(device, 'mdev_type')))
            found[mdev_uuid] = (os.path.basename(os.path.dirname(device)),
                                type_id)
        return found

    def act_on_mdev_writes(self):
        """Do what the kernel does on the writes to ``create`` and
        ``remove`` files since the last call, and empty those files.

        A uuid in a type's ``create`` becomes a mediated device of that
        type (``add_mdev``); a device whose ``remove`` holds ``1`` goes.
        """
        pci_devices = os.path.join(self.root, 'bus', 'pci', 'devices')
        for address in sorted(os.listdir(pci_devices)
                              if os.path.isdir(pci_devices) else []):
            types = os.path.join(pci_devices, address, MDEV_TYPES)
            for type_id in sorted(os.listdir(types)
                                  if os.path.isdir(types) else []):
                written = self._take(os.path.join(types, type_id, 'create'))
                if written:
                    self.add_mdev(address, type_id, written)
        for mdev_uuid in self.mdevs():
            remove = os.path.join(self.root, MDEV_DEVICES, mdev_uuid,
                                  'remove')
            if self._take(remove) == '1':
                self.remove_mdev(mdev_uuid)

    @staticmethod
    def _take(path):
        """The stripped text written to the attribute at ``path``, which is
        emptied; '' for a missing or refusing one."""
        if os.path.islink(path) or not os.path.isfile(path):
            return ''
        with open(path, encoding='ascii') as stream:
            text = stream.read().strip()
        open(path, 'w').close()
        return text

    def set_available(self, address, type_id, count):
        """Set the type's ``available_instances`` to ``count``; at 0 its
        ``create`` refuses writes."""
        self.write(os.path.join(self.type_directory(address, type_id),
                                'available_instances'), count)
        self._update_create_file(address, type_id)

    def _add_available(self, address, type_id, change):
        """Change the type's ``available_instances`` by ``change``."""
        path = os.path.join(self.root, self.type_directory(address, type_id),
                            'available_instances')
        with open(path, encoding='ascii') as stream:
            available = int(stream.read())
        self.set_available(address, type_id, available + change)

    def _update_create_file(self, address, type_id):
        """Give the type a ``create`` file, one refusing writes when no
        instance is available (or the count is unreadable)."""
        directory = os.path.join(self.root,
                                 self.type_directory(address, type_id))
        create = os.path.join(directory, 'create')
        try:
            with open(os.path.join(directory, 'available_instances'),
                      encoding='ascii') as stream:
                available = int(stream.read())
        except (OSError, ValueError):
            available = 0
        refusing = os.path.islink(create)
        if available > 0 and (refusing or not os.path.exists(create)):
            if refusing:
                os.remove(create)
            open(create, 'w').close()
        elif available <= 0 and not refusing:
            if os.path.exists(create):
                os.remove(create)
            os.symlink(REFUSING_FILE, create)

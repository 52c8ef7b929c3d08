"""Intel FPGA cards found through the kernel's fpga / dfl sysfs.

A card is the PCI physical function owning an FPGA: found from
/sys/class/fpga_region, /sys/class/fpga_manager, the older OPAE class
/sys/class/fpga/intel-fpga-dev.*, or a known Intel FPGA product id. The
card is a root deployable (no accelerators of its own) and each port of its
FPGA Management Engine a PR region deployable below it; VMs get the region
through the card's virtual functions (virtfn*), one per port when the card
has several ports, all of them when it has one. Those VFs are the region's
attach handles and, as deployables, its children.

A card is programmed with OPAE's ``fpgaconf`` on its physical function
(``[intel_fpga_driver] fpgaconf_path`` and ``program_timeout``). What a
region holds afterwards is read back from the AFU id its port reports in
sysfs (``loaded``), as OPAE's own tools read it. The PR interface id of the
card's FPGA Management Engine is the shell it has loaded
(``vendor_board_info`` ``shell_id``), which a partial bitstream must name.
At every discovery OPAE's ``fpgainfo errors all`` reads the card's error
registers, which tell its health (``cyborg.agent.drivers.fpga.health``).
"""

import logging
import re

from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers import sysfs as sysfs_reader
from cyborg.agent.drivers.fpga import command
from cyborg.agent.drivers.fpga import health as fpga_health
from cyborg.conf import drivers as driver_opts

LOG = logging.getLogger(__name__)

VENDOR_ID = 0x8086
# Physical function product ids of Intel FPGA cards, with the board names
# used in traits (CUSTOM_FPGA_INTEL_<board>).
BOARDS = {0x09c4: 'PAC_ARRIA10', 0x0b30: 'PAC_N3000', 0x0b2b: 'PAC_D5005'}
PCI = sysfs_reader.PCI_DEVICES
# Where the FME and its ports sit below a PCI function: the dfl layout
# (in-tree kernel driver) and the older intel-fpga layout (OPAE driver).
LAYOUTS = (
    {'container': ('fpga_region', 'region*'), 'fme': 'dfl-fme.*',
     'port': 'dfl-port.*',
     'region_id': ('dfl-fme-region.*', 'fpga_region', 'region*',
                   'compat_id')},
    {'container': ('fpga', 'intel-fpga-dev.*'), 'fme': 'intel-fpga-fme.*',
     'port': 'intel-fpga-port.*', 'region_id': ('pr', 'interface_id')},
)
_HEX_ID = re.compile(r'^[0-9a-fA-F-]{1,64}$')
# Seconds fpgainfo may take to read a card's error registers at each
# discovery: it answers at once, and a hung one must not hold the report.
ERRORS_TIMEOUT = 10

# Declared in cyborg.conf.drivers; registered when the agent loads this.
group = driver_opts.intel_fpga_group
opts = driver_opts.intel_fpga_opts
driver_opts.register_opts(conf.CONF, group)


def list_opts():
    """The options of this driver, for the sample configuration."""
    return {group: opts}


class IntelFPGADriver(base.Driver):
    """Intel FPGA cards of this host: the card's root deployable with a
    region deployable per FME port below it."""

    def __init__(self, sysfs_root=None, fpgaconf_path=None,
                 program_timeout=None, fpgainfo_path=None):
        """Read ``sysfs_root`` and program with the ``fpgaconf_path``
        executable, given ``program_timeout`` seconds; read the cards'
        errors with ``fpgainfo_path`` ('' : not at all) (defaults: the
        [intel_fpga_driver] options)."""
        options = conf.CONF.intel_fpga_driver
        self._sysfs = sysfs_reader.Sysfs(sysfs_root or options.sysfs_root)
        self._fpgaconf = command.Tool(
            path=fpgaconf_path or options.fpgaconf_path,
            timeout=program_timeout or options.program_timeout,
            option='[intel_fpga_driver] fpgaconf_path')
        path = options.fpgainfo_path if fpgainfo_path is None \
            else fpgainfo_path
        self._fpgainfo = command.Tool(
            path=path, timeout=ERRORS_TIMEOUT,
            option='[intel_fpga_driver] fpgainfo_path') if path else None
        # Cards whose unreadable error registers were logged already.
        self._errors_unknown = set()

    def discover(self):
        """Return the Intel FPGA cards; a card that cannot be read is
        skipped.

        :raises: base.DiscoveryFailed when the directories the cards are
            found in cannot be listed
        """
        devices = []
        for address in self._card_addresses():
            try:
                device = self._device(address)
            except Exception:
                LOG.exception('Skipping Intel FPGA %s', address)
                continue
            if device is not None:
                device.health, device.health_reason = self._health(address)
                devices.append(device)
        return devices

    def _health(self, address):
        """``(health, reason)`` of the card at ``address`` from its error
        registers (``fpga.health.fpgainfo_health``); healthy when fpgainfo
        is not configured or cannot read them (logged once per card)."""
        if self._fpgainfo is None:
            return fpga_health.fpgainfo_health('')
        try:
            text = command.query_tool(
                self._fpgainfo, ['errors', 'all']
                + fpgaconf_arguments(address, None)[:-1], 'fpga-' + address)
        except base.ReadbackFailed as error:
            if address not in self._errors_unknown:
                self._errors_unknown.add(address)
                LOG.info('The errors of the Intel FPGA %s are unknown, so '
                         'it is reported healthy: %s', address, error)
            return fpga_health.fpgainfo_health('')
        self._errors_unknown.discard(address)
        return fpga_health.fpgainfo_health(text)

    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """Load a green bitstream (.gbs) with OPAE's fpgaconf.

        fpgaconf is given the card's physical function (the control path):
        ``--bus``, ``--device`` and ``--function`` in hex, ``--segment``
        too when the PCI domain is not 0000 (older fpgaconf has no
        ``--segment``); it picks the port whose PR interface the bitstream
        was built for. The metadata are not needed.
        """
        address, refused = command.pci_target(controlpath_id,
                                              deployable_name)
        if refused is not None:
            return refused
        return command.run_tool(
            self._fpgaconf, fpgaconf_arguments(address, bitstream_path),
            bitstream_path, deployable_name or 'fpga-' + address)

    def loaded(self, controlpath_id, deployable_name=None):
        """The AFU id the region's port reports now (its function id).

        :raises: base.ReadbackFailed when the card or region cannot be
            found or read, or no region is named on a card with several
        """
        address, refused = command.pci_target(controlpath_id,
                                              deployable_name)
        if refused is not None:
            raise base.ReadbackFailed(refused.message)
        try:
            device = self._device(address)
        except Exception as error:
            raise base.ReadbackFailed('the Intel FPGA at %s cannot be read: '
                                      '%s' % (address, error)) from error
        if device is None:
            raise base.ReadbackFailed('no Intel FPGA card at %s' % address)
        regions = device.deployables[0].children
        if deployable_name in (None, 'fpga-' + address):
            if len(regions) != 1:
                raise base.ReadbackFailed(
                    'the Intel FPGA at %s has %d regions: name one'
                    % (address, len(regions)))
            deployable_name = regions[0].name
        for region in regions:
            if region.name == deployable_name:
                return base.Readback(
                    function_id=region.attributes.get('function_id'))
        raise base.ReadbackFailed('the Intel FPGA at %s has no region %s'
                                  % (address, deployable_name))

    def _card_addresses(self):
        """PCI addresses of FPGA functions, physical or virtual, sorted."""
        found = set()
        for parts in (('class', 'fpga_region'), ('class', 'fpga_manager')):
            for name in self._sysfs.list(*parts, essential=True):
                found.update(self._owning_function(*parts, name))
        for name in self._sysfs.list('class', 'fpga', essential=True,
                                     pattern='intel-fpga-dev.*'):
            found.update(self._owning_function('class', 'fpga', name))
        for address in sysfs_reader.pci_addresses(self._sysfs):
            if address in found:
                continue
            vendor = self._sysfs.read_int(PCI, address, 'vendor', base=16,
                                          required=False)
            product = self._sysfs.read_int(PCI, address, 'device', base=16,
                                           required=False)
            if vendor == VENDOR_ID and product in BOARDS:
                found.add(address)
        return sorted(found)

    def _owning_function(self, *parts):
        """The PCI address nearest ``parts`` in its resolved path, if any."""
        addresses = [part for part in self._sysfs.real_parts(*parts)
                     if base.is_pci_address(part)]
        return addresses[-1:]

    def _device(self, address):
        function = sysfs_reader.read_pci_function(self._sysfs, address)
        if function is None or function.physfn is not None:
            # A virtual function's region belongs to its physical function's
            # card, which is found on its own.
            return None
        if function.vendor_id != VENDOR_ID:
            return None
        layout, container = self._container(address)
        ports = []
        fme = None
        if layout is not None:
            ports = self._sysfs.list(*container, pattern=layout['port'])
            fmes = self._sysfs.list(*container, pattern=layout['fme'])
            fme = container + (fmes[0],) if fmes else None
        port_count = len(ports)
        if fme is not None:
            declared = self._sysfs.read_int(*fme, 'ports_num',
                                            required=False)
            port_count = max(port_count, declared or 0)
        port_count = max(port_count, 1)
        board = BOARDS.get(function.product_id, '%04X' % function.product_id)
        region_id = self._region_id(layout, fme)
        regions = []
        for index in range(port_count):
            vfs = _virtual_functions_of_port(function.virtfns, index,
                                             port_count)
            if not function.virtfns and index == 0:
                vfs = [address]
            afu_id = self._afu_id(layout, container, ports, index, vfs)
            regions.append(_region(address, index, board, region_id,
                                   afu_id, vfs, function.virtfns))
        vendor_board_info = {}
        if region_id:
            vendor_board_info['shell_id'] = region_id
        if fme is not None:
            bitstream_id = self._sysfs.read(*fme, 'bitstream_id',
                                            required=False)
            if bitstream_id:
                vendor_board_info['bitstream_id'] = bitstream_id
        return base.DriverDevice(
            type='FPGA', vendor=function.vendor, model=board.lower(),
            controlpath_id=base.pci_controlpath_id(address),
            std_board_info={'product_id': function.product,
                            'class': '0x%06x' % function.class_code},
            vendor_board_info=vendor_board_info,
            deployables=[base.root_deployable('fpga-%s' % address, regions)])

    def _container(self, address):
        """The layout and the directory holding the FME and ports."""
        for layout in LAYOUTS:
            subdirectory, pattern = layout['container']
            names = self._sysfs.list(PCI, address, subdirectory,
                                     pattern=pattern)
            if names:
                return layout, (PCI, address, subdirectory, names[0])
        return None, None

    def _region_id(self, layout, fme):
        """The PR interface id of the card's regions, or None."""
        if fme is None:
            return None
        *directories, file_name = layout['region_id']
        path = fme
        for directory in directories:
            names = self._sysfs.list(*path, pattern=directory)
            if not names:
                return None
            path = path + (names[0],)
        text = self._sysfs.read(*path, file_name, required=False)
        return _hex_id(self._sysfs, path + (file_name,), text)

    def _afu_id(self, layout, container, ports, index, vfs):
        """The id of the function (AFU) loaded in port ``index``, or None."""
        candidates = []
        if index < len(ports):
            candidates.append(container + (ports[index], 'afu_id'))
        # A port released to a virtual function shows below that function.
        for vf in vfs:
            vf_layout, vf_container = self._container(vf)
            if vf_layout is None:
                continue
            for port in self._sysfs.list(*vf_container,
                                         pattern=vf_layout['port']):
                candidates.append(vf_container + (port, 'afu_id'))
        for parts in candidates:
            text = self._sysfs.read(*parts, required=False)
            if text is not None:
                return _hex_id(self._sysfs, parts, text)
        return None


def fpgaconf_arguments(address, bitstream_path):
    """fpgaconf's arguments loading ``bitstream_path`` into the card whose
    physical function is at ``address``."""
    info = base.pci_address_info(address)
    arguments = []
    if int(info['domain'], 16):
        arguments += ['--segment', '0x' + info['domain']]
    arguments += ['--bus', '0x' + info['bus'], '--device',
                  '0x' + info['device'], '--function', '0x' + info['function'],
                  bitstream_path]
    return arguments


def _hex_id(sysfs, parts, text):
    """``text`` as a lower-case hex id without dashes; None (logged) if not
    one."""
    if text is None:
        return None
    if not _HEX_ID.match(text) or not text.replace('-', ''):
        sysfs.warn(sysfs.path(*parts), 'malformed id %r' % text[:64])
        return None
    return text.replace('-', '').lower()


def _virtual_functions_of_port(virtfns, index, port_count):
    """The VFs that give access to port ``index``."""
    if port_count == 1:
        return list(virtfns)
    return virtfns[index:index + 1]


def _region(address, index, board, region_id, afu_id, handle_addresses,
            virtfns):
    """The deployable of the PR region behind port ``index``; its VFs
    (those of ``virtfns`` among ``handle_addresses``) are its children."""
    traits = [base.custom_trait('FPGA', 'INTEL'),
              base.custom_trait('FPGA', 'INTEL', board),
              base.custom_trait('FPGA', 'REGION', 'INTEL',
                                region_id or str(index))]
    attributes = {'rc': 'FPGA', 'port': str(index)}
    if region_id:
        attributes['region_id'] = region_id
    if afu_id:
        traits.append(base.custom_trait('FPGA', 'FUNCTION', 'ID', 'INTEL',
                                        afu_id))
        attributes['function_id'] = afu_id
    attributes.update(base.trait_attributes(traits))
    name = 'fpga-%s-region%d' % (address, index)
    return base.DriverDeployable(
        name=name, num_accelerators=len(handle_addresses),
        attributes=attributes,
        attach_handles=[base.pci_attach_handle(vf)
                        for vf in handle_addresses],
        children=base.vf_deployables(
            name, [vf for vf in handle_addresses if vf in virtfns]))

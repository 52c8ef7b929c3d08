"""Xilinx FPGA cards (PCI vendor 0x10ee) found in /sys/bus/pci/devices.

An Alveo-style card shows two physical functions in one PCI slot: the
management function (the lower function number, used to program the card)
and the user function (passed to VMs). Each card is one device with one
deployable whose attach handle is the user function. Where sysfs has no PCI
devices directory (some containers), ``lspci -nnmm -D`` is read instead; if
it fails, the cards are unknown and the discovery fails.

A card is programmed with XRT's ``xbmgmt program --user`` on its management
function (``[xilinx_fpga_driver] xbmgmt_path`` and ``program_timeout``).
``xbmgmt examine --device <management function>`` tells what the card
holds: its ``Xclbin UUID`` is read back after programming (``loaded``) and
its ``Platform UUID`` (else ``Interface UUID``) is the shell reported at
discovery (``vendor_board_info`` ``shell_id``), which a partial bitstream
must name. A card whose examination fails is reported without a shell.
The same examination tells the card's health (its AXI firewall, its
asynchronous errors: ``cyborg.agent.drivers.fpga.health``).
"""

import logging
import re
import shlex
import subprocess

from cyborg import bitstream as bitstreams
from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers import sysfs as sysfs_reader
from cyborg.agent.drivers.fpga import command
from cyborg.agent.drivers.fpga import health as fpga_health
from cyborg.conf import drivers as driver_opts

LOG = logging.getLogger(__name__)

VENDOR_ID = 0x10ee
LSPCI_TIMEOUT = 30
# The number in brackets ending an lspci -nn field: "Xilinx Corporation [10ee]".
_LSPCI_NUMBER = re.compile(r'\[([0-9a-fA-F]{4})\]$')

# Declared in cyborg.conf.drivers; registered when the agent loads this.
group = driver_opts.xilinx_fpga_group
opts = driver_opts.xilinx_fpga_opts
driver_opts.register_opts(conf.CONF, group)


def list_opts():
    """The options of this driver, for the sample configuration."""
    return {group: opts}


def parse_lspci(text):
    """The PCIFunctions of ``lspci -nnmm -D`` output (no SR-IOV facts);
    lines that do not parse are logged and left out."""
    functions = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            fields = shlex.split(line)
            address = fields[0]
            class_code, vendor_id, product_id = (
                int(_LSPCI_NUMBER.search(field).group(1), 16)
                for field in fields[1:4])
        except (ValueError, IndexError, AttributeError):
            LOG.warning('Ignoring an lspci line that does not parse: %r',
                        line[:200])
            continue
        if not base.is_pci_address(address):
            LOG.warning('Ignoring an lspci line without a full PCI address '
                        '(is -D missing?): %r', line[:200])
            continue
        functions.append(sysfs_reader.PCIFunction(
            address=address.lower(), vendor_id=vendor_id,
            product_id=product_id, class_code=class_code << 8))
    return functions


def _slot(address):
    """``0000:3b:00.1`` -> ``0000:3b:00``."""
    return address.rsplit('.', 1)[0]


def examine_facts(text):
    """``(shell_id, xclbin_id)`` of ``xbmgmt examine`` output: its
    ``Platform UUID`` (else ``Interface UUID``) and ``Xclbin UUID`` as 32
    lower-case hex digits, None where absent or not a uuid."""
    fields = command.parse_fields(text)

    def uuid_of(*keys):
        for key in keys:
            value = fields.get(key, '')
            if value.lower().startswith('0x'):
                value = value[2:]
            found = bitstreams.hex32(value)
            if found is not None:
                return found
        return None

    return (uuid_of('platform uuid', 'interface uuid'),
            uuid_of('xclbin uuid'))


def card_device(management, user, shell_id=None):
    """The DriverDevice of one card from its two PCIFunctions, with the
    shell it has loaded (32 hex digits) when known."""
    product = '%04X' % management.product_id
    attributes = {'rc': 'FPGA', 'management_function': management.address,
                  'user_function': user.address}
    attributes.update(base.trait_attributes([
        base.custom_trait('FPGA', 'XILINX'),
        base.custom_trait('FPGA', 'PRODUCT', 'ID', product)]))
    deployable = base.DriverDeployable(
        name='fpga-%s' % management.address, num_accelerators=1,
        attributes=attributes,
        attach_handles=[base.pci_attach_handle(user.address)])
    return base.DriverDevice(
        type='FPGA', vendor=management.vendor, model=management.product,
        controlpath_id=base.pci_controlpath_id(management.address),
        std_board_info={'product_id': management.product,
                        'user_product_id': user.product,
                        'class': '0x%06x' % management.class_code},
        vendor_board_info={'shell_id': shell_id} if shell_id else {},
        deployables=[deployable])


class XilinxFPGADriver(base.Driver):
    """Xilinx cards of this host, one deployable each."""

    def __init__(self, sysfs_root=None, xbmgmt_path=None,
                 program_timeout=None):
        """Read ``sysfs_root`` and program with the ``xbmgmt_path``
        executable, given ``program_timeout`` seconds (defaults: the
        [xilinx_fpga_driver] options)."""
        options = conf.CONF.xilinx_fpga_driver
        self._sysfs = sysfs_reader.Sysfs(sysfs_root or options.sysfs_root)
        self._lspci = options.lspci_command
        self._xbmgmt = command.Tool(
            path=xbmgmt_path or options.xbmgmt_path,
            timeout=program_timeout or options.program_timeout,
            option='[xilinx_fpga_driver] xbmgmt_path')
        # Cards whose unknown shell was logged already.
        self._shell_unknown = set()

    def discover(self):
        """Return one device per Xilinx card; a card with an unreadable
        function is logged and skipped.

        :raises: base.DiscoveryFailed when the PCI devices cannot be listed
            or, without them in sysfs, lspci fails
        """
        slots = self._slots()
        devices = []
        for slot in sorted(slots):
            functions = slots[slot]
            if None in functions:
                # Without all its functions the card's identity (its
                # management function) is unknown.
                LOG.warning('Skipping the Xilinx card in PCI slot %s: one of '
                            'its functions cannot be read', slot)
                continue
            functions.sort(key=lambda function: function.address)
            management = functions[0]
            user = functions[1] if len(functions) > 1 else functions[0]
            shell_id, health = self._shell(management.address)
            device = card_device(management, user, shell_id)
            device.health, device.health_reason = health
            devices.append(device)
        return devices

    def _examine(self, address):
        """``examine_facts`` of the card managed at ``address``.

        :raises: base.ReadbackFailed
        """
        return examine_facts(command.query_tool(
            self._xbmgmt, ['examine', '--device', address],
            'fpga-' + address))

    def _shell(self, address):
        """The shell loaded on the card at ``address`` (None, logged once
        per driver, when xbmgmt cannot tell) and its ``(health, reason)``
        from the same examination (``fpga.health.xbmgmt_health``; healthy
        when it cannot tell)."""
        try:
            text = command.query_tool(
                self._xbmgmt, ['examine', '--device', address],
                'fpga-' + address)
        except base.ReadbackFailed as error:
            if address not in self._shell_unknown:
                self._shell_unknown.add(address)
                LOG.info('The shell of the Xilinx card %s is unknown, so no '
                         'partial bitstream fits it: %s', address, error)
            return None, fpga_health.xbmgmt_health('')
        return examine_facts(text)[0], fpga_health.xbmgmt_health(text)

    def loaded(self, controlpath_id, deployable_name=None):
        """The xclbin uuid ``xbmgmt examine`` reports for the card (as its
        function id).

        :raises: base.ReadbackFailed when the card is not a PCI function of
            this driver's naming or xbmgmt cannot read it
        """
        address, refused = command.pci_target(controlpath_id,
                                              deployable_name)
        if refused is not None:
            raise base.ReadbackFailed(refused.message)
        return base.Readback(function_id=self._examine(address)[1])

    def _slots(self):
        """PCIFunctions of each slot holding a Xilinx function, by slot;
        None stands for a function that cannot be read."""
        if not self._sysfs.exists(sysfs_reader.PCI_DEVICES):
            slots = {}
            for function in self._lspci_functions():
                slots.setdefault(_slot(function.address), []).append(function)
            return slots
        addresses = sysfs_reader.pci_addresses(self._sysfs)
        vendors = {address: self._sysfs.read_int(
            sysfs_reader.PCI_DEVICES, address, 'vendor', base=16)
            for address in addresses}
        slots = {_slot(address): [] for address, vendor in vendors.items()
                 if vendor == VENDOR_ID}
        for address in addresses:
            functions = slots.get(_slot(address))
            if functions is None:
                continue
            function = None
            if vendors[address] == VENDOR_ID:
                function = sysfs_reader.read_pci_function(self._sysfs,
                                                          address)
            if function is None or function.physfn is None:
                functions.append(function)
        return slots

    def _lspci_functions(self):
        """Xilinx functions as lspci lists them.

        :raises: base.DiscoveryFailed when lspci cannot be run or fails:
            then this host's cards are unknown, not absent
        """
        lspci = [self._lspci, '-nnmm', '-D']
        try:
            result = subprocess.run(lspci, capture_output=True, text=True,
                                    timeout=LSPCI_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError) as error:
            raise base.DiscoveryFailed(
                'no PCI devices in sysfs and %s failed: %s'
                % (' '.join(lspci), error)) from error
        if result.returncode != 0:
            raise base.DiscoveryFailed(
                'no PCI devices in sysfs and %s exited with %d: %s'
                % (' '.join(lspci), result.returncode,
                   result.stderr.strip()[:200]))
        return [function for function in parse_lspci(result.stdout)
                if function.vendor_id == VENDOR_ID]

    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """Load a user image (.xclbin) with ``xbmgmt program --device
        <management function> --user <file>``.

        The control path is the card's management function. Flashing a
        base (shell) image needs a cold reboot, so it is not done here. The
        metadata are not needed.
        """
        address, refused = command.pci_target(controlpath_id,
                                              deployable_name)
        if refused is not None:
            return refused
        return command.run_tool(
            self._xbmgmt,
            ['program', '--device', address, '--user', bitstream_path],
            bitstream_path, deployable_name or 'fpga-' + address)

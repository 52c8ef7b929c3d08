"""Options of the [agent] group: drivers and the inventory report."""

from oslo_config import cfg

group = cfg.OptGroup('agent', title='Options for the cyborg-agent service')

opts = [
    cfg.ListOpt(
        'enabled_drivers', default=['fake_driver'],
        help='Accelerator drivers the agent loads (entry points of the '
             'cyborg.accelerator.driver namespace), for example '
             'fake_driver, intel_fpga_driver, xilinx_fpga_driver, '
             'nvidia_gpu_driver, pci_driver.'),
    cfg.IntOpt(
        'report_interval', default=60, min=1,
        deprecated_name='periodic_interval', deprecated_group='DEFAULT',
        help='Seconds between two full inventory reports of the agent. '
             "OpenStack Cyborg's [DEFAULT] periodic_interval, which paced "
             "its agent's resource report, is read as this option."),
    cfg.StrOpt(
        'fake_inventory',
        help='Path of a YAML or JSON file describing the simulated devices '
             'of the fake driver. When unset, the fake driver simulates one '
             'FPGA.'),
    cfg.IntOpt(
        'max_bitstream_bytes', default=1024 ** 3, min=1,
        help='Largest bitstream image, in bytes, the agent downloads from '
             'Glance to program an FPGA; a larger image is refused before '
             'or while it is downloaded.'),
    cfg.IntOpt(
        'bitstream_cache_size', default=4096, min=0,
        help='Size, in MiB, of the agent\'s cache of bitstreams downloaded '
             'from Glance, kept in the bitstream-cache directory of '
             '[DEFAULT] state_path. A bitstream bound or programmed again '
             'on this host is not downloaded again while Glance shows the '
             'same hash for it (the cached file is hashed again before '
             'each use); the least recently used files are removed first '
             'when the cache would hold more. 0 disables the cache: every '
             'program and bind downloads its bitstream.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}

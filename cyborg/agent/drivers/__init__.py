"""Accelerator drivers: the contract (base), sysfs reading and one module per
kind of device (fake, fpga, gpu, pci)."""

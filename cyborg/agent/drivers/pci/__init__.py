"""The generic PCI passthrough driver."""

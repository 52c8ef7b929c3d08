"""An accelerator control plane for OpenStack, wire-compatible with Cyborg API v2."""

"""Drivers of GPUs."""

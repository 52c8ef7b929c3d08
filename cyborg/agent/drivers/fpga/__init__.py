"""Drivers of FPGAs."""

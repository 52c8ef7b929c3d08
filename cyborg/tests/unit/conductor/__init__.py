"""Unit tests of cyborg.conductor."""

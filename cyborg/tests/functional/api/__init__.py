"""Tests: functional/api."""

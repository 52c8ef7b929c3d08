"""Tests: functional/services."""

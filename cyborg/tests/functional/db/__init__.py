"""Tests: functional/db."""

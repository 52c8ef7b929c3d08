"""Tests: unit/api."""

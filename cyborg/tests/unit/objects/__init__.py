"""Tests: unit/objects, on SQLite."""

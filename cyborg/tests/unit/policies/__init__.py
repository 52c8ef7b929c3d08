"""Tests: unit/policies."""

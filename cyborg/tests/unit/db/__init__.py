"""Tests: unit/db (query helpers) and builders of database records."""

"""Cyborg's tests: unit (in-process, SQLite) and functional (real servers)."""

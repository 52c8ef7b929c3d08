"""Alembic revisions, loaded by file path; a package only so wheels include it."""

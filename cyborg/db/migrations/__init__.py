"""Alembic environment and revisions; run them through cyborg.db.migration."""

"""cyborg.db.queries."""

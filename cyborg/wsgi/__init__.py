"""cyborg.wsgi."""

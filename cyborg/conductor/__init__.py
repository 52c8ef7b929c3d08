"""cyborg.conductor."""

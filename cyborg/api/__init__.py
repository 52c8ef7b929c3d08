"""cyborg.api."""

"""cyborg.policies."""

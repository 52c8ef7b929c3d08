"""cyborg.clients."""

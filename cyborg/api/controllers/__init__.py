"""cyborg.api.controllers."""

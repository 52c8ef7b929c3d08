"""cyborg.api.controllers.v2."""

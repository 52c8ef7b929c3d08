"""cyborg.api.views."""

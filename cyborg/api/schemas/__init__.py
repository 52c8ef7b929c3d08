"""cyborg.api.schemas."""

"""cyborg.agent."""

"""cyborg.agent.drivers."""

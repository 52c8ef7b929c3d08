"""Unit tests of cyborg.agent."""

"""Tests: functional/clients (cyborg's clients against the real services)."""

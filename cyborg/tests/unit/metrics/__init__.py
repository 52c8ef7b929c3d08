"""Unit tests of cyborg.metrics: each service's endpoint scraped after real work."""

"""Unit tests of cyborg.metrics, what the services' metrics share, and the
scraping helper of every service's metrics tests."""

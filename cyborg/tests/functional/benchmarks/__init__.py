"""Tests: functional/benchmarks."""

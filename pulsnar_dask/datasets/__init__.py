"""Benchmark data: the paper's synthetic generator, shuttle and the real UCI sets."""

"""Data for trying the method: the paper's synthetic PU generator."""

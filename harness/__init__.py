"""A judge for GPU kernel competitions: load, check, time and rank submissions."""

__version__ = "0.1.0"

"""Measurement: how long each call takes, on two clocks, and what the samples say."""

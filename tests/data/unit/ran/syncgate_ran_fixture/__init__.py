"""A package whose functions the unit level's tracer is tested on (written for syncgate's tests)."""

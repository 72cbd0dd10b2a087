"""Calibration against silicon: does the simulated accelerator block where a real device does?

:mod:`.scenarios` is the one list of micro-scenarios (used by ``syncgate calibrate`` and the unit
tests), :mod:`.physics` simulates the two #22754 tables, :mod:`.agreement` runs both sides and
compares them, and ``h200.toml`` is the recorded H200 measurement with its provenance.
"""

"""A release's own model config: its defaults decide which features are on."""

from dataclasses import dataclass


@dataclass
class ModelConfig:
    max_model_len: int = 4096
    # the shared-prefix kernel: off unless a user turns it on (the test writes False here to
    # play an older release, where it was on by default)
    disable_cascade_attn: bool = True

"""A release's own model config, from before the shared-prefix path was turned off by default."""

from dataclasses import dataclass


@dataclass
class ModelConfig:
    max_model_len: int = 4096
    disable_cascade_attn: bool = False

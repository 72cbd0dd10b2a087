"""A linear-attention layer that picks its attention backend itself."""

from fampkg.v1.attention.backends.delta_rule import DeltaRuleBackend


class DeltaLayer:
    def __init__(self, prefix):
        self.prefix = prefix

    def get_attn_backend(self):
        return DeltaRuleBackend

"""A gated-delta-net builder (a hybrid model family's default) that calls the family's chunk
ops every step with prefills: one imported with the module, one inside the function."""

import torch

from opspkg.ops.fla.index import chunk_indices, chunk_table
from opspkg.v1.attention.backend import AttentionMetadataBuilder


class GDNAttentionMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.query_start_loc = torch.zeros(config.max_num_reqs + 1, dtype=torch.int32,
                                           device=device)

    def build(self, common_prefix_len, step):
        n = step.num_reqs
        self.query_start_loc[: n + 1].copy_(step.query_start_loc_cpu, non_blocking=True)
        host_indices = chunk_indices(step.query_start_loc_cpu, 64)
        device_indices = chunk_indices(self.query_start_loc[: n + 1], 64)
        # the table lands where the argument lives: of the host starts it stays on the host (no
        # readback); of starts nothing places, the scan cannot tell (not a failure)
        host_rows = chunk_table(step.query_start_loc_cpu).tolist()
        rows = chunk_table(step.starts).tolist()  # expect: blocking_readback unknown_residence to_param
        return host_indices, device_indices, host_rows, rows, self._offsets(n)

    def _offsets(self, n):
        from opspkg.ops.fla.cumsum import chunk_offsets

        return chunk_offsets(self.query_start_loc[: n + 1])

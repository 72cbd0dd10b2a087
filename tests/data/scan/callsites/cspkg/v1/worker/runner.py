"""A runner that fills the metadata record from its host/device pairs every step."""

import torch

from cspkg.v1.worker.builder import CsAttentionMetadataBuilder
from cspkg.v1.worker.meta import CsCommonAttentionMetadata
from cspkg.v1.worker.spans import chunk_ids, chunk_ids_near, longest, widest


class CsModelRunner:
    def __init__(self, config, device):
        self.device = device
        size = config.max_num_reqs + 1
        self.query_start_loc = torch.zeros(size, dtype=torch.int32, device=device)
        self.query_start_loc_cpu = torch.zeros(size, dtype=torch.int32, pin_memory=True)
        self.positions_staging = torch.zeros(size, dtype=torch.int64, pin_memory=True)
        self.seq_lens = torch.zeros(size, dtype=torch.int32, device=device)
        self.attn_metadata_builder = CsAttentionMetadataBuilder()
        self.last_meta = None

    def execute_model(self, batch):
        n = batch.num_reqs
        meta = CsCommonAttentionMetadata(
            query_start_loc=self.query_start_loc[: n + 1],
            query_start_loc_cpu=self.query_start_loc_cpu[: n + 1],
            positions=self.positions_staging[:n],
            seq_lens=self.seq_lens[:n],
            num_reqs=n,
        )
        built = self.attn_metadata_builder.build(common_prefix_len=0, common_attn_metadata=meta)
        chunk_ids(self.query_start_loc_cpu[: n + 1], batch.sizes)
        chunk_ids_near(self.query_start_loc[: n + 1], batch.sizes)
        self.last_meta = batch.previous_meta
        return built, longest(self.last_meta), widest(batch.flash_meta, 8)

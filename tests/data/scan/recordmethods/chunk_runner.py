"""A runner of our own whose prefill metadata asks the step's record for a derived tensor.

``meta.compute_num_computed_tokens()`` runs the record class's own method: it subtracts the
query lengths from the sequence lengths on the device, so ``.cpu()`` of it reads device values
back, although nothing in the builder names a device tensor.
"""

from dataclasses import dataclass

import torch


@dataclass
class CommonAttentionMetadata:
    query_start_loc: torch.Tensor
    query_start_loc_cpu: torch.Tensor
    seq_lens: torch.Tensor
    num_reqs: int

    def compute_num_computed_tokens(self) -> torch.Tensor:
        query_lens = self.query_start_loc[1:] - self.query_start_loc[:-1]
        return self.seq_lens - query_lens

    def host_query_lens(self) -> torch.Tensor:
        return self.query_start_loc_cpu[1:] - self.query_start_loc_cpu[:-1]


class ChunkModelRunner:
    def __init__(self, device: torch.device, max_reqs: int) -> None:
        self.query_start_gpu = torch.zeros(max_reqs + 1, dtype=torch.int32, device=device)
        self.query_start_host = torch.zeros(max_reqs + 1, dtype=torch.int32, pin_memory=True)
        self.seq_lens_gpu = torch.zeros(max_reqs, dtype=torch.int32, device=device)

    def execute_model(self, n: int, num_prefills: int) -> int:
        meta = CommonAttentionMetadata(query_start_loc=self.query_start_gpu[:n + 1],
                                       query_start_loc_cpu=self.query_start_host[:n + 1],
                                       seq_lens=self.seq_lens_gpu[:n], num_reqs=n)
        return self._prefill_chunks(meta, num_prefills)

    def _prefill_chunks(self, meta: CommonAttentionMetadata, num_prefills: int) -> int:
        if num_prefills == 0:
            return 0
        context = meta.compute_num_computed_tokens().cpu()  # expect: blocking_readback none
        lens = meta.host_query_lens().tolist()
        return int(context[-num_prefills:].sum()) + sum(lens)

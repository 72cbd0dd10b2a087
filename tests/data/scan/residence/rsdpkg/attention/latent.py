"""A latent-attention backend whose builder keeps the context chunks' lengths on the host in a
nested record, and whose impl uploads them per chunk (the MLA chunked-context shape); and a
sparse builder that keeps the batch's device lengths on self, through a cache dict."""

from dataclasses import dataclass

import torch


@dataclass
class RsdCommonAttentionMetadata:
    seq_lens: torch.Tensor
    seq_lens_cpu: torch.Tensor
    query_lens_cpu: torch.Tensor
    num_reqs: int


@dataclass
class RsdPrefillMetadata:
    @dataclass
    class ChunkedContext:
        starts: torch.Tensor
        chunk_lens: torch.Tensor

    block_table: torch.Tensor
    chunked: ChunkedContext | None = None


@dataclass
class RsdLatentMetadata:
    prefill: RsdPrefillMetadata | None


class RsdLatentMetadataBuilder:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.starts_dev = torch.zeros(4, 8, dtype=torch.int32, device=device)
        self.table = torch.zeros(8, 16, dtype=torch.int32, device=device)

    def build(self, common_attn_metadata: RsdCommonAttentionMetadata) -> RsdLatentMetadata:
        context_cpu = common_attn_metadata.seq_lens_cpu - common_attn_metadata.query_lens_cpu
        starts = torch.arange(4, dtype=torch.int32).unsqueeze(1) * 128
        ends = torch.minimum(context_cpu.unsqueeze(0), starts + 128)
        chunk_lens = (ends - starts).clamp(min=0)
        chunked = RsdPrefillMetadata.ChunkedContext(starts=self.starts_dev, chunk_lens=chunk_lens)
        return RsdLatentMetadata(prefill=RsdPrefillMetadata(self.table, chunked))


class RsdLatentImpl:
    def forward(self, q: torch.Tensor, cache: torch.Tensor, attn_metadata: RsdLatentMetadata,
                output: torch.Tensor) -> torch.Tensor:
        prefill = attn_metadata.prefill
        if prefill is None or prefill.chunked is None:
            return output
        for i in range(len(prefill.chunked.chunk_lens)):
            lens = prefill.chunked.chunk_lens[i]
            cache.index_copy_(0, prefill.chunked.starts[i], lens.to(q.device))  # expect: blocking_copy none stored
        return output


class RsdSparseMetadataBuilder:
    def __init__(self) -> None:
        self.seq_lens = None
        self.shared = {}

    def build(self, common_attn_metadata: RsdCommonAttentionMetadata, first: bool) -> int:
        if first:
            self.seq_lens = common_attn_metadata.seq_lens[: common_attn_metadata.num_reqs]
            self.shared["seq_lens"] = self.seq_lens
        else:
            self.seq_lens = self.shared["seq_lens"]
        return self._prefill(common_attn_metadata.num_reqs // 2)

    def _prefill(self, start: int) -> int:
        return self.seq_lens[start:].max().item()  # expect: blocking_readback none copies

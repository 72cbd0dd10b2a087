"""The service the runner shares: its codec, and a CUDA-graph wrapper built around that codec.
The wrapper's eager fallback, the streamer's flush and the codec's decoder submodule block the
host; each is reached only through the object an attribute holds."""

import torch
from torch import nn


class CodecDecoder(nn.Module):
    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        lengths = torch.tensor([hidden.size(0)], device=hidden.device)  # expect: blocking_copy none
        return hidden * lengths


class Codec(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(16, 8)
        self.decoder = CodecDecoder()

    def embed(self, codes: torch.Tensor) -> torch.Tensor:
        return self.table(codes)

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        frames = int(codes.max().item())  # expect: blocking_readback none
        return self.table(codes[:, :frames])

    def flush(self, codes: torch.Tensor) -> list[int]:
        return codes[:, -1].tolist()  # expect: blocking_readback none


class GraphWrapper:
    def __init__(self, codec, buckets: tuple[int, ...] = (4, 8)) -> None:
        self.codec = codec
        self.buckets = buckets
        self.ready = False

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        if codes.shape[-1] > self.buckets[-1]:
            return self.codec.decode(codes)
        return codes.float()


class Streamer:
    def __init__(self, codec: Codec) -> None:
        self.codec = codec

    def push(self, codes: torch.Tensor) -> list[int]:
        return self.codec.flush(codes)


class VocoderService:
    def __init__(self) -> None:
        self.codec = Codec()
        self.graph_wrapper: GraphWrapper | None = None
        self.graph_wrapper = GraphWrapper(self.codec)


_SERVICES: dict[str, VocoderService] = {}


def get_service(name: str) -> VocoderService:
    if name not in _SERVICES:
        _SERVICES[name] = VocoderService()
    return _SERVICES[name]

"""The codec's tokenizer, held by a worker that a process-wide cache hands out."""

import torch
from torch import nn
from transformers import PreTrainedModel


class ResidualQuantizer(nn.Module):
    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        total = torch.tensor(0.0, device=codes.device)  # expect: blocking_copy none
        for layer in range(codes.shape[0]):
            total = total + codes[layer].float()
        return total


class CodecEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.quantizer = ResidualQuantizer()

    def decode_vq(self, codes: torch.Tensor) -> torch.Tensor:
        return self.quantizer.decode(codes)


class CodecTokenizer(PreTrainedModel):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.encoder = CodecEncoder()


class TokenizerWorker:
    def __init__(self, path: str) -> None:
        self.tokenizer = CodecTokenizer.from_pretrained(path)


class Vocoder(nn.Module):
    def __init__(self, rate: int) -> None:
        super().__init__()
        self.rate = rate

    @classmethod
    def build(cls, rate: int) -> "Vocoder":
        return cls(rate)

    def decode(self, hidden: torch.Tensor) -> torch.Tensor:
        scale = torch.tensor([float(self.rate)], device=hidden.device)  # expect: blocking_copy none
        return hidden * scale


_WORKERS: dict[str, TokenizerWorker] = {}


def get_tokenizer_worker(path: str) -> TokenizerWorker:
    if path not in _WORKERS:
        _WORKERS[path] = TokenizerWorker(path)
    return _WORKERS[path]

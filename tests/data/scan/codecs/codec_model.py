"""A codec stage of our own: the shapes of vLLM-Omni's Fish Speech and MiMo-Audio decoders.

Each request's codes are device slices gathered in a list; the lengths tensor is placed on
``valid[0].device``, the device those slices are on, so reading it back is a sync. The tokenizer
comes from a process-wide cache whose getter returns a dict lookup (only its annotations say
what it holds), and the tokenizer inside is built by an inherited ``from_pretrained``.
"""

import torch
from codec_tokenizer import TokenizerWorker, Vocoder, get_tokenizer_worker
from torch import nn


class CodecDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self._service: TokenizerWorker | None = get_tokenizer_worker("codec")
        self.vocoder = Vocoder.build(24000)

    def forward(self, input_ids: torch.Tensor) -> list:
        valid = []
        for start in range(0, input_ids.shape[0], 8):
            codes = input_ids[start:start + 8].reshape(2, 4)
            valid.append(codes)
        lengths = torch.tensor([c.shape[1] for c in valid],  # expect: blocking_copy none
                               device=valid[0].device)
        longest = int(lengths.max().item())  # expect: blocking_readback none
        batch = torch.zeros(len(valid), 2, longest, dtype=torch.long, device=valid[0].device)
        for i, codes in enumerate(valid):
            frames = int(lengths[i].item())  # expect: blocking_readback none
            batch[i, :, :frames] = codes
        parts = []
        for i in range(len(valid)):
            parts.append(torch.arange(4) + i)
        offsets = torch.zeros(len(parts), device=parts[0].device)  # host items: a host tensor
        label = int(offsets.max().item())
        tokenizer = self._service.tokenizer
        hidden = tokenizer.encoder.decode_vq(input_ids.reshape(2, -1))
        return [self.vocoder.decode(hidden), batch, label]

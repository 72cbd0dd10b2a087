"""A decoding runner of our own whose helpers compute a size from a device tensor only when the
caller leaves it out (``max_len=None``): each fallback runs only for a caller that passes
nothing, None, or something that may be None. ``_decode`` passes ``pad_mask`` a frame count
made of builtins and ``span`` a shape, so neither fallback runs from the step; ``crop`` gets an
attribute (None until ``set_limit``), ``window`` gets the caller's own parameter, and ``trim``
rebinds its parameter before the test, so those readbacks do run. The mirror: ``merge`` reads
its mask only when a caller passes one, and ``_decode`` leaves it out (its default is None), so
that readback never runs from the step; ``blend`` gets ``None`` spelled out from ``_decode`` but
a mask from ``_encode``, which the step also runs, so its readback does run."""

import torch


def pad_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    if max_len is None:
        max_len = int(lengths.max().item())  # never: the one caller passes an int
    return torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]


def span(codes: torch.Tensor, count: int | None = None) -> torch.Tensor:
    if count is not None:
        return codes[:count]
    return codes[: int(codes.argmax().item())]  # never: the caller passes a shape


def crop(codes: torch.Tensor, limit: int | None = None) -> torch.Tensor:
    if limit is None:
        limit = int(codes.sum().item())  # expect: blocking_readback none
    return codes[:limit]


def window(codes: torch.Tensor, size: int | None = None) -> torch.Tensor:
    if size is None:
        size = int(codes.min().item())  # expect: blocking_readback none
    return codes[:size]


def trim(codes: torch.Tensor, options: dict[str, int], keep: int | None = None) -> torch.Tensor:
    keep = options.get("keep", keep)
    if keep is None:
        keep = int(codes.max().item())  # expect: blocking_readback none
    return codes[:keep]


def merge(codes: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    if mask is not None:
        return codes[: int(mask.sum().item())]  # never: the one caller leaves the mask out
    return codes


def blend(codes: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    if mask is None:
        return codes
    return codes[: int(mask.sum().item())]  # expect: blocking_readback none


class PadModelRunner:
    def __init__(self) -> None:
        self.input_ids = torch.zeros(4096, dtype=torch.int64, device="cuda")
        self.lengths = torch.zeros(64, dtype=torch.int64, device="cuda")
        self.limit: int | None = None
        self.options: dict[str, int] = {}

    def set_limit(self, limit: int) -> None:
        self.limit = limit

    def _decode(self, codes: torch.Tensor, num_tokens: int, width: int | None) -> torch.Tensor:
        frames = max(1, int(num_tokens * 2))
        mask = pad_mask(self.lengths, max_len=frames)
        head = span(codes, count=codes.shape[0])
        tail = crop(codes, limit=self.limit)
        middle = window(codes, size=width)
        rest = trim(codes, self.options, keep=8)
        merged = merge(codes) + blend(codes, None)
        return torch.cat([head, tail, middle, rest, merged]) + mask.sum()

    def _encode(self, codes: torch.Tensor) -> torch.Tensor:
        return blend(codes, mask=codes > 0)

    def execute_model(self, num_tokens: int) -> torch.Tensor:
        codes = self.input_ids[:num_tokens]
        return self._decode(codes, num_tokens, None) + self._encode(codes)

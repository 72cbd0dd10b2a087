"""A streaming decoder session of our own (the shape of vLLM-Omni's MOSS-TTS codec session): the
stage holds it in an attribute typed ``Optional`` and hands it out through a getter, helpers
take it as an annotated parameter, and one-shot probes build it where they use it."""

import torch


class StreamSession:
    def __init__(self, capacity: int) -> None:
        self.free = list(range(capacity))

    def step(self, codes: torch.Tensor) -> torch.Tensor:
        frames = int(codes.shape[-1])
        lengths = torch.full((codes.shape[0],), frames, device=codes.device)
        return codes[..., : int(lengths.max().item())]  # expect: blocking_readback none

    def flush(self, codes: torch.Tensor) -> int:
        return int(codes.sum().item())  # expect: blocking_readback none

    def probe(self, codes: torch.Tensor) -> int:
        return int(codes.argmax().item())  # expect: blocking_readback none

    def trim(self, codes: torch.Tensor) -> list:
        return codes.tolist()  # expect: blocking_readback none

    def describe(self, codes: torch.Tensor) -> int:
        return int(codes.min().item())  # expect: blocking_readback none

    def release(self, slot: int) -> None:
        self.free.append(slot)


def open_session(capacity: int) -> StreamSession:
    return StreamSession(capacity)

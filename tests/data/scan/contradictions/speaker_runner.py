"""A generation runner of our own whose vocoder is built in ``__init__`` (or left None) and
whose speaker table loads on a path that tests the vocoder both ways: ``_decode`` calls
``_load_speakers`` only when the vocoder is None, and ``_load_speakers`` returns first thing
when it is None, so its upload never runs from there (load time reaches it, not the step).
The reference is different: ``_decode`` tests it the same two ways, but ``_refresh``, called in
between, assigns it (and ``reset`` sets it back, so this is no one-time warm-up), so the
readback after the second test does run."""

import torch


class SpeakerModelRunner:
    def __init__(self, vocoder: torch.nn.Module | None) -> None:
        self.input_ids = torch.zeros(4096, dtype=torch.int64, device="cuda")
        self.vocoder = vocoder
        self.reference = None
        self.peak = 0
        self.speakers: dict[str, torch.Tensor] = {}

    def load_weights(self) -> None:
        self._load_speakers([0.5, 0.25])

    def _load_speakers(self, table: list[float]) -> None:
        if self.vocoder is None:
            return
        self.speakers["default"] = torch.tensor(table, device="cuda")  # never from _decode

    def reset(self) -> None:
        self.reference = None

    def _refresh(self) -> None:
        self.reference = self.input_ids[:8].clone()

    def _measure_reference(self) -> None:
        if self.reference is None:
            return
        self.peak = int(self.input_ids[:8].max().item())  # expect: blocking_readback none

    def _decode(self, codes: torch.Tensor) -> torch.Tensor:
        if self.vocoder is None:
            self._load_speakers([1.0])
        if self.reference is None:
            self._refresh()
            self._measure_reference()
        if self.vocoder is None:
            if self.vocoder is not None:
                return codes.cpu()  # a test that contradicts the one around it
            return codes.float()
        return self.vocoder(codes)

    def execute_model(self, num_tokens: int) -> torch.Tensor:
        codes = self.input_ids[:num_tokens]
        return self._decode(codes)

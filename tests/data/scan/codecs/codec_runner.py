"""A generation runner of our own whose model is a codec stage (vLLM-Omni's code2wav shape)."""

import torch
from codec_model import CodecDecoder


class CodecModelRunner:
    def __init__(self) -> None:
        self.model = CodecDecoder()
        self.input_ids = torch.zeros(4096, dtype=torch.int64, device="cuda")

    def execute_model(self, num_tokens: int) -> list[torch.Tensor]:
        return self.model(self.input_ids[:num_tokens])

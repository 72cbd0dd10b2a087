"""A generation runner of our own whose stage decodes audio through a shared service: a
CUDA-graph wrapper that keeps the codec it was built with (a constructor parameter with no
annotation) and falls back to the codec's eager decode for long chunks; a streamer typed by its
parameter's annotation; and a batched path that calls the codec's decoder submodule directly."""

import torch
from vocoder_service import Streamer, VocoderService, get_service


class VocoderModelRunner:
    def __init__(self) -> None:
        self.input_ids = torch.zeros(4096, dtype=torch.int64, device="cuda")
        self._service: VocoderService | None = get_service("codec")
        self.streamer = Streamer(self._service.codec)

    def execute_model(self, num_tokens: int) -> list:
        codes = self.input_ids[:num_tokens].reshape(2, -1)
        tail = self.streamer.push(codes)
        wrapper = self._service.graph_wrapper
        if wrapper is not None and wrapper.ready:
            return [wrapper.decode(codes), tail]
        codec = self._service.codec
        hidden = codec.embed(codes)
        return [codec.decoder(hidden), tail]

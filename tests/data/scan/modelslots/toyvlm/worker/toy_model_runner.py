"""A runner of our own whose loaded model (no scanned class stored in ``self.model``) may be any
scanned model class: its ``embed_input_ids`` runs every step, with the placeholder mask the
runner builds on the host."""

import torch


class ToyModelRunner:
    def __init__(self) -> None:
        self.model = load_model()
        self.input_ids = torch.zeros(4096, dtype=torch.int64, device="cuda")
        self.is_placeholder = torch.zeros(4096, dtype=torch.bool, device="cpu", pin_memory=True)

    def execute_model(self, num_tokens: int) -> torch.Tensor:
        return self.model.embed_input_ids(self.input_ids[:num_tokens],
                                          mask=self.is_placeholder[:num_tokens])


def load_model() -> torch.nn.Module:
    raise NotImplementedError

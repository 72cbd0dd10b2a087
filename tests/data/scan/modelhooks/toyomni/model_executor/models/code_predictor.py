"""A stage model the talker builds with the model factory; its codes are read back per step."""

import torch
from torch import nn


class ToyCodePredictorForCausalLM(nn.Module):
    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states

    def predict(self, hidden_states: torch.Tensor) -> list[int]:
        return hidden_states.argmax(dim=-1).tolist()  # expect: blocking_readback none

"""A stage model the talker builds with the model factory; its codes are read back per step.
Another family's stage model has a method of the same name: the talker's factory call names its
architecture, so a call on the talker's attribute never lands there."""

import torch
from torch import nn


class ToyCodePredictorForCausalLM(nn.Module):
    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states

    def predict(self, hidden_states: torch.Tensor) -> list[int]:
        return hidden_states.argmax(dim=-1).tolist()  # expect: blocking_readback none


class OtherFamilyCodePredictor(nn.Module):
    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states

    def predict(self, hidden_states: torch.Tensor) -> list[int]:
        return hidden_states.max(dim=-1).indices.tolist()  # another family's stage only

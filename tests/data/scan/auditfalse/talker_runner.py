"""A generation runner of our own whose model is the talker stage."""

import torch
from talker_stage import TalkerStage


class TalkerModelRunner:
    def __init__(self) -> None:
        self.model = TalkerStage()
        self.logits = torch.zeros(64, 128, device="cuda")

    def execute_model(self, num_tokens: int) -> list:
        return self.model(self.logits[:num_tokens])

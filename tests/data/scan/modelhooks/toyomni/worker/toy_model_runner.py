"""A runner that hands the step to the model the loader built."""

import torch

from toyomni.worker.loader import load_model


class ToyOmniModelRunner:
    def __init__(self) -> None:
        self.model = load_model("toyomni.model_executor.models.talker",
                                "ToyTalkerForConditionalGeneration", "talker")
        mtp = getattr(self.model, "talker_mtp", None)
        if mtp is not None:
            self.talker_mtp = mtp

    def execute_model(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden_states = self.model(input_ids)
        logits = self.model.compute_logits(hidden_states)
        if getattr(self, "talker_mtp", None) is not None:
            self.codes = self.talker_mtp(hidden_states)
        if getattr(self.model, "has_postprocess", False):
            self.stash = self.model.postprocess(hidden_states)
        return logits

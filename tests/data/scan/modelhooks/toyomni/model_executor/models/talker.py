"""A talker model: its logits and its postprocess run every step of the talker stage."""

import torch
from torch import nn

from toyomni.model_executor.hook_mixin import HookMixin
from toyomni.model_executor.registry import init_vllm_registered_model


class ToyTalkerForConditionalGeneration(nn.Module, HookMixin):
    def __init__(self, stage: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.weight = nn.Parameter(torch.zeros(8, 16))
        self.code_predictor = init_vllm_registered_model(
            "code_predictor", architectures=["ToyCodePredictorForCausalLM"])
        self.has_postprocess = stage == "talker"
        if self.has_postprocess:
            self.set_custom_postprocess(self.talker_postprocess)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embed(input_ids)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        logits = torch.matmul(hidden_states, self.weight)
        host = logits.cpu()  # expect: blocking_readback none
        host[:, 0] = -1e9
        return host.to(logits.device)  # expect: blocking_copy none

    def talker_postprocess(self, hidden_states: torch.Tensor, **info: object) -> dict:
        codes = self.code_predictor.predict(hidden_states)
        pad = self.code_predictor.pad_projection(hidden_states[-1])
        info["pad"] = pad.to("cpu")  # expect: blocking_copy none
        ids = self.tokenizer(info).to(device=next(self.parameters()).device)
        info["ids_embed"] = self.embed(ids).to("cpu")  # expect: blocking_copy none
        return {"last": hidden_states[-1].to("cpu"), "codes": codes}  # expect: blocking_copy none

    def talker_mtp(self, hidden_states: torch.Tensor) -> int:
        return int(hidden_states.argmax().item())  # expect: blocking_readback none

    def unused_helper(self, hidden_states: torch.Tensor) -> int:
        return int(hidden_states.sum().item())  # no runner call reaches it

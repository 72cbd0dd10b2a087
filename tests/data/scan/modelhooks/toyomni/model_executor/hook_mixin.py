"""The stage hooks a model may install: the runner calls ``model.postprocess(...)``."""

import torch


class HookMixin:
    def set_custom_postprocess(self, postprocess_fn) -> None:
        self.postprocess = postprocess_fn

    def postprocess(self, hidden_states: torch.Tensor, **info: object) -> dict:
        raise NotImplementedError("this stage has no postprocess")

"""A model factory of our own (vLLM builds a composite model's parts this way)."""

import torch


def init_vllm_registered_model(vllm_config: object, hf_config: object,
                               prefix: str = "") -> torch.nn.Module:
    raise NotImplementedError

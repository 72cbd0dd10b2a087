"""Builds a registered model by its architecture name."""


def init_vllm_registered_model(architecture: str):
    raise NotImplementedError(architecture)

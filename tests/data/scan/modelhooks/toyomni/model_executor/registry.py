"""Builds a registered model by its architecture name."""


def init_vllm_registered_model(prefix: str, architectures: list[str] | None = None):
    raise NotImplementedError(prefix, architectures)

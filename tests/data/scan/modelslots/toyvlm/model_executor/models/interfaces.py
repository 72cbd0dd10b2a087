"""The multimodal interface a model class declares, as vLLM's models do."""


class SupportsMultiModal:
    supports_multimodal = True

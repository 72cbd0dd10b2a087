"""Model classes of our own. ``SpeechModel`` builds its language model from the text part of its
config and hands it a device mask: that slot holds a text model, never the multimodal
``AudioModel``, whose mask readback therefore only sees the runner's host mask. ``TextModel``
embeds through ``self.model``, the backbone its class attribute ``model_cls`` names (a subclass
names a louder one). ``OpaqueModel``'s backbone comes from a builder the scan cannot see: inside
a model class ``self.model`` is still its own backbone, not any model class, so
``AudioModel.embed`` is not reached."""

import torch

from .interfaces import SupportsMultiModal
from .utils import init_vllm_registered_model


class TextBackbone(torch.nn.Module):
    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return input_ids.float()


class LoudTextBackbone(TextBackbone):
    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return input_ids[: int(input_ids.max().item())].float()  # expect: blocking_readback none


class TextModel(torch.nn.Module):
    model_cls = TextBackbone

    def __init__(self) -> None:
        super().__init__()
        self.model = self.model_cls()

    def embed_input_ids(self, input_ids: torch.Tensor,
                        mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.embed(input_ids)


class LoudTextModel(TextModel):
    model_cls = LoudTextBackbone


class OpaqueModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = build_backbone()

    def embed_input_ids(self, input_ids: torch.Tensor,
                        mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.embed(input_ids)


def build_backbone() -> torch.nn.Module:
    raise NotImplementedError


class AudioModel(torch.nn.Module, SupportsMultiModal):
    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return input_ids[: int(input_ids.argmax().item())].float()  # never: no fan-out here

    def embed_input_ids(self, input_ids: torch.Tensor,
                        mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is None:
            return input_ids.float()
        placeholders = int(mask.sum().item())  # never: only the runner's host mask
        return input_ids[:placeholders].float()


class SpeechModel(torch.nn.Module, SupportsMultiModal):
    def __init__(self, config: object) -> None:
        super().__init__()
        self.language_model = init_vllm_registered_model(
            vllm_config=config, hf_config=config.text_config, prefix="language_model")

    def embed_input_ids(self, input_ids: torch.Tensor,
                        mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.language_model.embed_input_ids(input_ids, mask=input_ids > 7) * 2

"""The latent-attention backend the selector picks for a model with ``use_mla``: the model
chooses it, no option does. Its build is the common one, defined in another package."""

from fampkg.model_executor.attention.latent_common import LatentCommonMetadataBuilder


class FlashAttnMLAMetadataBuilder(LatentCommonMetadataBuilder):
    def decode_widths(self, step):
        return step.query_lens_cpu[: step.num_reqs]

"""A hardware plugin's platform: it rewrites the config vLLM hands it before the engine starts."""


class Platform:
    pass


class PluginPlatform(Platform):
    device_name = "plugin"

    @classmethod
    def check_and_update_config(cls, vllm_config) -> None:
        parallel_config = vllm_config.parallel_config
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = "plugin.worker.PluginWorker"
        # the shared-prefix kernel is not supported on this device: always off
        if vllm_config.model_config is not None:
            vllm_config.model_config.disable_cascade_attn = True
        if vllm_config.model_config.use_mla:
            vllm_config.cache_config.enable_prefix_caching = False

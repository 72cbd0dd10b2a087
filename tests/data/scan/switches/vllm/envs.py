"""The environment variables of our own release: what each is when no one sets it."""

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    VLLM_TRACE_STEPS: str | None = None
    VLLM_TRACE_MODE: str = "stream"

environment_variables = {
    "VLLM_TRACE_STEPS": lambda: os.getenv("VLLM_TRACE_STEPS"),
    "VLLM_TRACE_MODE": lambda: os.getenv("VLLM_TRACE_MODE", "stream"),
}

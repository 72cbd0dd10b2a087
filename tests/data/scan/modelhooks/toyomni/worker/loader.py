"""Builds the model the config names (the scan cannot know which class)."""

import importlib


def load_model(module_name: str, class_name: str, stage: str):
    return getattr(importlib.import_module(module_name), class_name)(stage)

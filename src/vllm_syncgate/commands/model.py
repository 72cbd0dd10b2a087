"""``syncgate model build DIR [--arch llama|qwen2]``: the tiny offline model, reproducibly."""

from __future__ import annotations

import argparse

from vllm_syncgate.models import ARCHES, DEFAULT_ARCH, build_model, load_recipe
from vllm_syncgate.models.recipe import cached_model_dir

HELP = "build the deterministic tiny model and tokenizer used for CPU serve runs"

EXAMPLES = """
  syncgate model build /tmp/tiny                # Llama, identical bytes every time
  syncgate model build /tmp/tiny-qwen --arch qwen2
  syncgate model path                           # where syncgate check caches it
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = sub.add_parser("build", help="write the model to DIR (identical bytes on every build)",
                           formatter_class=parser.formatter_class)
    build.add_argument(
        "dir", metavar="DIR", help="output directory (created; replaced if syncgate built it)"
    )
    build.add_argument("--arch", choices=ARCHES, default=DEFAULT_ARCH, help="default: %(default)s")
    where = sub.add_parser("path", help="print the cache directory of a recipe's model",
                           formatter_class=parser.formatter_class)
    where.add_argument("--arch", choices=ARCHES, default=DEFAULT_ARCH, help="default: %(default)s")


def run(args: argparse.Namespace) -> int:
    recipe = load_recipe(args.arch)
    if args.action == "path":
        print(cached_model_dir(recipe))
        return 0
    info = build_model(args.dir, recipe)
    print(f"built {recipe.name} model (recipe {info.digest}) in {info.path}")
    for name, digest in sorted(info.files.items()):
        print(f"  {digest[:16]}  {name}")
    return 0

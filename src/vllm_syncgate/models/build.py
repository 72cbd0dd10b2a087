"""Build a tiny random-weight model and its tokenizer offline, byte for byte reproducibly.

No model hub is reachable on CI machines, and parity needs the HF reference and ``vllm serve`` to
load the very same weights, so the model is made here: a byte-level BPE tokenizer trained on
seeded pseudo-English, and a Llama/Qwen2 with seeded fp32 init. Output goes to a temporary sibling
directory and is renamed into place only when complete, so a crash never leaves a half model.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ModelDirError
from vllm_syncgate.models.recipe import Recipe, cached_model_dir
from vllm_syncgate.reportfiles import follow_umask
from vllm_syncgate.safeio import json_loads, read_regular

MARKER = "syncgate-model.json"
_REQUIRED = ("config.json", "tokenizer.json", "tokenizer_config.json")


@dataclass(frozen=True)
class ModelInfo:
    """What a model directory holds, read from its marker (or inferred for foreign models)."""

    path: Path
    recipe: str
    digest: str
    files: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "recipe": self.recipe, "digest": self.digest,
                "files": self.files}


def corpus_lines(recipe: Recipe) -> list[str]:
    """Seeded pseudo-English: enough repeated structure for BPE to learn merges."""
    spec = recipe.tokenizer
    rng = random.Random(recipe.seed)
    words: list[str] = list(spec["words"])
    lines = []
    for i in range(int(spec["lines"])):
        length = rng.randint(spec["min_words"], spec["max_words"])
        sentence = [rng.choice(words) for _ in range(length)]
        if i % int(spec["number_every"]) == 0:
            sentence.insert(rng.randrange(len(sentence) + 1), str(rng.randint(0, 9999)))
        lines.append(" ".join(sentence).capitalize() + rng.choice([".", ".", "!", "?"]))
    return lines


def _train_tokenizer(recipe: Recipe) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    spec = recipe.tokenizer
    unk, bos, eos, pad = spec["specials"]
    tok = Tokenizer(models.BPE(unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=int(spec["vocab_size"]),
        min_frequency=1,
        special_tokens=list(spec["specials"]),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_lines(recipe), trainer=trainer)
    bos_id = tok.token_to_id(bos)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        unk_token=unk,
        pad_token=pad,
        model_max_length=int(spec["model_max_length"]),
    )
    fast.chat_template = spec["chat_template"]
    return fast


def _make_model(recipe: Recipe, tokenizer: Any) -> Any:
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    classes = {
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
    }
    config_name, model_name = classes[recipe.arch]
    config = getattr(transformers, config_name)(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        architectures=[model_name],
        dtype="float32",
        **recipe.model,
    )
    random.seed(recipe.seed)
    torch.manual_seed(recipe.seed)
    model = getattr(transformers, model_name)(config).to(torch.float32)
    return model.eval()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_model(out_dir: str | Path, recipe: Recipe) -> ModelInfo:
    """Write the recipe's model to ``out_dir`` (replacing an earlier syncgate build there)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ModelDirError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ModelDirError(f"{out}: exists, is not empty and was not built by syncgate")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        follow_umask(tmp, directory=True)  # mkdtemp's 0700 would hide the model from other users
    except OSError as exc:
        raise ModelDirError(f"{out}: cannot create ({exc.strerror})") from None
    try:
        tokenizer = _train_tokenizer(recipe)
        model = _make_model(recipe, tokenizer)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        info = ModelInfo(out, recipe.name, recipe.digest(), files)
        (tmp / MARKER).write_text(json.dumps(info.to_json() | {"path": None}, indent=2,
                                             sort_keys=True) + "\n")
        for written in tmp.iterdir():  # safetensors writes 0600: the umask decides, as for open()
            if written.is_file():
                follow_umask(written)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info


def ensure_model(recipe: Recipe) -> tuple[ModelInfo, bool]:
    """The recipe's cached model, built on first use. Returns (info, reused)."""
    target = cached_model_dir(recipe)
    if (target / MARKER).is_file():
        return inspect_model_dir(target), True
    return build_model(target, recipe), False


def inspect_model_dir(path: str | Path) -> ModelInfo:
    """Check that ``path`` is a loadable HF model directory; one-line ModelDirError if not."""
    model_dir = Path(path)
    if not model_dir.exists():
        raise ModelDirError(f"{model_dir}: model directory does not exist")
    if not model_dir.is_dir():
        raise ModelDirError(f"{model_dir}: is not a directory")
    missing = [name for name in _REQUIRED if not (model_dir / name).is_file()]
    if missing:
        raise ModelDirError(f"{model_dir}: not a model directory (missing {', '.join(missing)})")
    if not any(model_dir.glob("*.safetensors")):
        raise ModelDirError(f"{model_dir}: no *.safetensors weights")
    config = _read_json(model_dir / "config.json")
    if not isinstance(config, dict) or not config.get("architectures"):
        raise ModelDirError(f"{model_dir}/config.json: no 'architectures' entry")
    marker = model_dir / MARKER
    if not marker.is_file():
        return ModelInfo(model_dir, "external", "", {})
    data = _read_json(marker)
    fields = ("recipe", "digest", "files")
    missing = [key for key in fields if not isinstance(data, dict) or key not in data]
    if missing:
        raise ModelDirError(f"{marker}: not a syncgate model marker (no {missing[0]!r})")
    if not isinstance(data["files"], dict):
        raise ModelDirError(f"{marker}: 'files' must be an object")
    return ModelInfo(model_dir, str(data["recipe"]), str(data["digest"]), data["files"])


def _read_json(path: Path) -> Any:
    """A JSON file of the model directory; a one-line ModelDirError if it cannot be read."""
    try:
        return json_loads(read_regular(path))
    except OSError as exc:
        raise ModelDirError(f"{path}: cannot be read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelDirError(f"{path}: not valid JSON ({exc})") from None

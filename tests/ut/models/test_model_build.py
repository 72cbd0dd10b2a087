"""The tiny model: byte-identical rebuilds, the recipe's shape, the cache, bad model dirs."""

import json

import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.errors import ModelDirError
from vllm_syncgate.models import build_model, ensure_model, inspect_model_dir, load_recipe
from vllm_syncgate.models.build import MARKER, corpus_lines
from vllm_syncgate.models.recipe import RecipeError, _resolve, cached_model_dir


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "llama"
    return build_model(out, load_recipe("llama"))


def test_built_model_follows_the_umask(built):
    """Other users of a shared cache or container can read the model (mkdtemp's 0700 would hide it)."""
    from vllm_syncgate.reportfiles import current_umask

    umask = current_umask()
    assert built.path.stat().st_mode & 0o777 == 0o777 & ~umask
    for path in built.path.iterdir():
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path.name


def test_two_builds_are_byte_identical(built, tmp_path):
    again = build_model(tmp_path / "again", load_recipe("llama"))
    assert again.files == built.files
    for name in built.files:
        assert (built.path / name).read_bytes() == (again.path / name).read_bytes(), name


def test_model_shape_matches_the_recipe(built):
    config = json.loads((built.path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["head_dim"] == 64
    assert config["dtype"] == "float32"
    from safetensors.torch import load_file

    weights = load_file(built.path / "model.safetensors")
    assert 1_500_000 < sum(t.numel() for t in weights.values()) < 3_000_000
    assert {str(t.dtype) for t in weights.values()} == {"torch.float32"}


def test_tokenizer_is_byte_level_bpe_with_bos(built):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(built.path)
    ids = tok("The river runs ünïcode 1234")["input_ids"]
    assert ids[0] == tok.bos_token_id
    assert tok.decode(ids[1:]) == "The river runs ünïcode 1234"  # byte-level: lossless
    assert 1000 < len(tok) <= 2048  # the corpus runs out of merges just below 2048


def test_corpus_is_seeded():
    recipe = load_recipe("llama")
    assert corpus_lines(recipe) == corpus_lines(recipe)
    assert len(corpus_lines(recipe)) == recipe.tokenizer["lines"]


def test_qwen2_recipe_inherits_and_differs():
    llama, qwen = load_recipe("llama"), load_recipe("qwen2")
    assert qwen.arch == "qwen2"
    assert qwen.tokenizer == llama.tokenizer
    assert qwen.model["head_dim"] == 64
    assert qwen.digest() != llama.digest()


@pytest.mark.slow
def test_qwen2_builds_and_loads(tmp_path):
    from transformers import AutoModelForCausalLM

    info = build_model(tmp_path / "qwen", load_recipe("qwen2"))
    model = AutoModelForCausalLM.from_pretrained(info.path)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert model.config.head_dim == 64


def test_recipe_errors_name_file_and_key(tmp_path):
    (tmp_path / "a.toml").write_text('base = "b"\narch = "llama"\n')
    (tmp_path / "b.toml").write_text('base = "a"\n')
    with pytest.raises(RecipeError, match="base: recipe chain loops"):
        _resolve(tmp_path / "a.toml", ())
    (tmp_path / "c.toml").write_text('arch = "llama"\nsurprise = 1\n')
    with pytest.raises(RecipeError, match=r"c\.toml: surprise: unknown key"):
        _resolve(tmp_path / "c.toml", ())
    with pytest.raises(RecipeError, match="unknown architecture"):
        load_recipe("gpt2")


def test_cache_is_keyed_by_recipe_hash_and_reused(monkeypatch, tmp_path, built):
    monkeypatch.setenv("SYNCGATE_CACHE_DIR", str(tmp_path))
    recipe = load_recipe("llama")
    target = cached_model_dir(recipe)
    assert target == tmp_path / "models" / recipe.digest()
    # seed the cache with the module's build instead of building a third time
    import shutil

    shutil.copytree(built.path, target)
    info, reused = ensure_model(recipe)
    assert reused
    assert info.path == target
    assert info.digest == recipe.digest()


def test_build_refuses_a_foreign_non_empty_dir(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(ModelDirError, match="not empty and was not built by syncgate"):
        build_model(tmp_path, load_recipe("llama"))
    assert (tmp_path / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.write_text("x"), "is not a directory"),
        (lambda p: p.mkdir(), "missing config.json"),
        (lambda p: (p.mkdir(), *(p.joinpath(n).write_text("{}") for n in (
            "config.json", "tokenizer.json", "tokenizer_config.json"))), "no *.safetensors"),
    ],
    ids=["missing", "file", "empty", "no-weights"],
)
def test_bad_model_dirs_are_one_line_errors(tmp_path, setup, message):
    path = tmp_path / "model"
    setup(path)
    with pytest.raises(ModelDirError) as info:
        inspect_model_dir(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_marker_is_written_last_and_names_the_recipe(built):
    data = json.loads((built.path / MARKER).read_text())
    assert data["recipe"] == "llama"
    assert set(data["files"]) >= {"model.safetensors", "tokenizer.json", "config.json"}


def test_model_build_command(tmp_path, capsys, built, monkeypatch):
    assert main(["model", "build", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert built.files["model.safetensors"][:16] in out
    monkeypatch.setenv("SYNCGATE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["model", "path", "--arch", "qwen2"]) == 0
    assert capsys.readouterr().out.strip() == str(cached_model_dir(load_recipe("qwen2")))
    with pytest.raises(SystemExit) as info:
        main(["model", "build", str(tmp_path / "q"), "--arch", "gpt2"])
    assert info.value.code == 2

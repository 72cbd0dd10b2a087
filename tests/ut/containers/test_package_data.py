"""Images install syncgate as a wheel, not editable: a data file the package-data patterns miss
is absent there (it happened: the model recipes, so `syncgate check` failed only in the image)."""

import fnmatch
import tomllib

SOURCE_SUFFIXES = (".py", ".pyc")


def test_every_data_file_is_shipped(repo):
    patterns = tomllib.loads((repo / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-data"]["vllm_syncgate"]
    package = repo / "src" / "vllm_syncgate"
    data = [p.relative_to(package).as_posix() for p in package.rglob("*")
            if p.is_file() and not p.name.endswith(SOURCE_SUFFIXES) and "__pycache__" not in p.parts]
    assert data, "no data files found"
    missing = [f for f in data if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert missing == [], f"add package-data patterns for {missing}"

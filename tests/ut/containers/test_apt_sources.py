"""ci/docker-up.sh takes Debian's mirror from the machine's own apt sources (no host in code)."""

import re
import subprocess

import pytest


def apt_uri(repo, suite, apt_dir):
    result = subprocess.run(["bash", "-c", 'set -euo pipefail; source ci/apt-sources.sh; apt_uri "$@"',
                             "apt_uri", suite, str(apt_dir)],
                            cwd=repo, capture_output=True, text=True, timeout=30, check=True)
    return result.stdout.strip()


@pytest.mark.parametrize("layout", ["oneline", "deb822"])
@pytest.mark.parametrize(("suite", "uri"), [
    ("bookworm", "http://mirror.example/debian"),
    ("bookworm-updates", "http://mirror.example/debian"),
    ("bookworm-security", "http://security.mirror.example/debian-security"),
    ("trixie", ""),
])
def test_enabled_binary_source_of_the_suite(repo, layout, suite, uri):
    # deb-src lines, a disabled stanza and bracketed options are skipped, not taken.
    assert apt_uri(repo, suite, repo / "tests/data/containers/apt" / layout) == uri


def test_no_source_for_the_suite_prints_nothing(repo):
    assert apt_uri(repo, "bookworm", repo / "tests/data/containers/apt/none") == ""


@pytest.mark.parametrize("script", ["ci/docker-up.sh", "ci/apt-sources.sh"])
def test_scripts_name_no_host_but_loopback(repo, script):
    hosts = re.findall(r"https?://([^/:'\"\s]+)", (repo / script).read_text())
    assert set(hosts) <= {"127.0.0.1"}

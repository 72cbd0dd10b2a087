#!/usr/bin/env bash
# Regenerate requirements/constraints.txt from the working .venv: every installed distribution
# pinned to its exact version (syncgate itself, pip and setuptools left out). Run after adding a
# dependency to pyproject.toml and installing it, then commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo "# Exact versions scripts/setup-env.sh installs; regenerate with scripts/lock-constraints.sh."
  .venv/bin/python -m pip list --format=freeze --exclude-editable --disable-pip-version-check 2>/dev/null \
    | grep -v -i -E '^(syncgate|pip|setuptools|wheel)==' | LC_ALL=C sort -f
} > requirements/constraints.txt
echo "wrote requirements/constraints.txt ($(grep -c '==' requirements/constraints.txt) pins)"

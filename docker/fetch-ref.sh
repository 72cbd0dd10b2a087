#!/bin/bash
# fetch-ref OWNER/REPO REF DEST: unpack the GitHub archive of one exact ref (commit or tag) at
# DEST. Used by Dockerfile.npu so the image needs no git and the ref cannot move under a branch.
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: fetch-ref OWNER/REPO REF DEST" >&2; exit 2; }
url="https://github.com/$1/archive/$2.tar.gz"
mkdir -p "$3"
python3 -c 'import shutil, sys, urllib.request; shutil.copyfileobj(urllib.request.urlopen(sys.argv[1]), sys.stdout.buffer)' "$url" \
  | tar -xz -C "$3" --strip-components=1

#!/usr/bin/env bash
# Bring up a Docker engine that can build and run syncgate's CPU image on a machine with no
# registry access (CI's CPU machines). Idempotent; ci/docker-down.sh stops what this started.
#
# Why each step (measured recipe: the project's docker notes):
#  - docker.io/debootstrap/docker-compose come from Debian's packages; compose v2 and buildx are
#    not packaged for bookworm, so builds use Debian's own /usr/bin/docker (BuildKit built in)
#    and runs use docker-compose v1.
#  - dockerd runs without bridge and iptables (the CI sandbox forbids both); builds and
#    containers that need the outside use host networking.
#  - nothing can be pulled, so the base image the CPU Dockerfile names (debian:bookworm-slim) is
#    made from a debootstrap rootfs and `docker import`; the rootfs tarball is cached.
#  - torch 2.13.0+cpu exists only as this machine's local wheel; it is served over HTTP on
#    127.0.0.1 so the build can pip-install it without a COPY layer.
#
# State (pids, logs, the wheel URL) lives in $SYNCGATE_DOCKER_STATE (default
# /tmp/syncgate-docker); `state/env` holds KEY=VALUE lines the e2e test reads.
set -euo pipefail
cd "$(dirname "$0")/.."

state="${SYNCGATE_DOCKER_STATE:-/tmp/syncgate-docker}"
cache="${SYNCGATE_CACHE_DIR:-$HOME/.cache/syncgate}/docker"
# shellcheck source=ci/apt-sources.sh
source ci/apt-sources.sh
# Debian's packages from this machine's own apt sources (or DEBIAN_MIRROR / DEBIAN_SECURITY_MIRROR).
mirror="${DEBIAN_MIRROR:-$(apt_uri bookworm)}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-$(apt_uri bookworm-security)}"
base_image="${SYNCGATE_BASE_IMAGE:-debian:bookworm-slim}"
docker=/usr/bin/docker   # Debian's client: BuildKit without buildx
log() { echo "docker-up: $*" >&2; }
die() { echo "docker-up: error: $*" >&2; exit 2; }

[[ $(id -u) -eq 0 ]] || die "must run as root (installs packages and starts dockerd)"
mkdir -p "$state" "$cache"

# 1. Debian's packages, only when missing.
if [[ ! -x /usr/sbin/dockerd || ! -x $docker || ! -x /usr/sbin/debootstrap ]] \
   || ! command -v docker-compose >/dev/null; then
  log "installing docker.io debootstrap docker-compose from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker.io debootstrap docker-compose >/dev/null
fi

# 2. The engine: reuse one that answers (and leave it alone on the way down), else start ours.
if $docker info >/dev/null 2>&1; then
  log "a Docker engine already answers; using it"
else
  log "starting dockerd --iptables=false --bridge=none (log: $state/dockerd.log)"
  setsid /usr/sbin/dockerd --iptables=false --bridge=none >"$state/dockerd.log" 2>&1 &
  echo $! >"$state/dockerd.pid"
  for _ in $(seq 1 60); do
    $docker info >/dev/null 2>&1 && break
    kill -0 "$(cat "$state/dockerd.pid")" 2>/dev/null \
      || die "dockerd exited during start-up: $(tail -n 3 "$state/dockerd.log" | tr '\n' ' ')"
    sleep 0.5
  done
  $docker info >/dev/null 2>&1 || die "dockerd did not answer within 30 s (log: $state/dockerd.log)"
fi

# 3. The base image, from a cached, trimmed debootstrap rootfs.
if ! $docker image inspect "$base_image" >/dev/null 2>&1; then
  tarball="$cache/bookworm-minbase.tar"
  if [[ ! -s $tarball ]]; then
    rootfs="$(mktemp -d "$state/rootfs.XXXXXX")"
    trap 'rm -rf "$rootfs"' EXIT
    [[ -n $mirror ]] || die "no apt source for bookworm in /etc/apt (set DEBIAN_MIRROR)"
    log "debootstrap --variant=minbase bookworm from $mirror"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$state/debootstrap.log" 2>&1 \
      || die "debootstrap failed (log: $state/debootstrap.log)"
    # Trim as Docker's official images do: no recommends, no docs, no caches, no indexes.
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
      >"$rootfs/etc/apt/apt.conf.d/docker-no-recommends"
    printf 'Acquire::Languages "none";\nAcquire::GzipIndexes "true";\n' \
      >"$rootfs/etc/apt/apt.conf.d/docker-indexes"
    printf 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb || true"; };\n' \
      >"$rootfs/etc/apt/apt.conf.d/docker-clean"
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" \
      >"$rootfs/etc/apt/sources.list"
    if [[ -n $security_mirror ]]; then
      printf 'deb %s bookworm-security main\n' "$security_mirror" >>"$rootfs/etc/apt/sources.list"
    else
      log "no apt source for bookworm-security here: the image's sources.list has none"
    fi
    chroot "$rootfs" apt-get clean
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
      "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log
    mkdir -p "$rootfs/var/lib/apt/lists/partial"
    : >"$rootfs/etc/resolv.conf"
    tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
    trap - EXIT
  fi
  log "importing $tarball as $base_image"
  $docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$tarball" "$base_image" >/dev/null
  echo "$base_image" >"$state/imported-image"
fi

# 4. The local torch wheel, served on 127.0.0.1 for `--build-arg PIP_FIND_LINKS=...`.
python="${PYTHON:-python3}"
[[ -x .venv/bin/python ]] && python=.venv/bin/python
if [[ -f $state/wheels.pid ]] && kill -0 "$(cat "$state/wheels.pid")" 2>/dev/null; then
  log "wheel server already running"
else
  mkdir -p "$state/wheels"
  "$python" -m pip download -q --no-deps torch==2.13.0 -d "$state/wheels" \
    || die "torch==2.13.0 (+cpu) not obtainable: this machine lacks the local torch wheel"
  port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  setsid "$python" -m http.server --bind 127.0.0.1 --directory "$state/wheels" "$port" \
    >"$state/wheels.log" 2>&1 &
  echo $! >"$state/wheels.pid"
  for _ in $(seq 1 20); do
    "$python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/')" 2>/dev/null \
      && break
    sleep 0.25
  done
  echo "$port" >"$state/wheels.port"
fi
printf 'SYNCGATE_WHEELS_URL=http://127.0.0.1:%s/\nSYNCGATE_BASE_IMAGE=%s\n' \
  "$(cat "$state/wheels.port")" "$base_image" >"$state/env"
log "ready: $(tr '\n' ' ' <"$state/env")"

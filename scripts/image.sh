#!/usr/bin/env bash
# scripts/image.sh [TAG] — build razao's container image with podman: the
# static binary first (CGO_ENABLED=0, trimmed paths), then
# deploy/Containerfile on scratch around it. TAG defaults to
# razao:<short commit>; the image is also tagged razao:latest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:$PATH"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/containers.conf}

command -v podman >/dev/null 2>&1 || { echo "image: podman not found (Debian: apt-get install podman runc)" >&2; exit 1; }
ca=/etc/ssl/certs/ca-certificates.crt
[[ -s $ca ]] || { echo "image: no CA bundle at $ca (Debian: apt-get install ca-certificates)" >&2; exit 1; }

tag=${1:-razao:$(git rev-parse --short HEAD 2>/dev/null || echo dev)}
ctx=$(mktemp -d)
trap 'rm -rf -- "$ctx"' EXIT

CGO_ENABLED=0 go build -trimpath -buildvcs=auto -ldflags='-s -w' -o "$ctx/razao" ./cmd/razao
cp "$ca" "$ctx/ca-certificates.crt"
# Docker's format: OCI's has no HEALTHCHECK.
podman build --quiet --format docker --file deploy/Containerfile --tag "$tag" --tag razao:latest "$ctx" >/dev/null
echo "$tag"

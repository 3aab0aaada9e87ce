#!/usr/bin/env bash
# Builds kube-apiserver from the Go module proxy (no git, no internet besides GOPROXY).
#
# A throwaway module requires k8s.io/kubernetes and replaces every k8s.io/* staging
# module (mapped to ./staging in k8s.io/kubernetes's go.mod) with the matching
# v0.X.Y release. Staging modules that have no such release on the proxy (they are
# not used by kube-apiserver) are replaced by local stub modules.
#
# Usage: [K8S=1.34.4] OUT=path/to/kube-apiserver hack/build-kube-apiserver.sh
# First build: 10-18 min on 2 cores; ~10 s with a warm Go build cache.
set -euo pipefail
K8S=${K8S:-1.34.4}
STAGING=v0.${K8S#1.}
OUT=${OUT:?set OUT to the path of the binary to write}
case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac
mkdir -p "$(dirname "$OUT")"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
export GOFLAGS=-mod=mod GOWORK=off

go mod download -json "k8s.io/kubernetes@v$K8S" >/dev/null
MOD=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$K8S.mod
{
  printf 'module local/kas\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S"
  for m in $(sed -n '/^replace (/,/^)/p' "$MOD" | grep '=> ./staging' | awk '{print $1}'); do
    if go list -m -versions "$m" 2>/dev/null | tr ' ' '\n' | grep -qx "$STAGING"; then
      printf '\t%s => %s %s\n' "$m" "$m" "$STAGING"
    else
      d=./dummy/${m#k8s.io/}
      mkdir -p "$d"
      printf 'module %s\n\ngo 1.24\n' "$m" >"$d/go.mod"
      printf '\t%s => %s\n' "$m" "$d"
    fi
  done
  echo ")"
} >go.mod.tmp
mv go.mod.tmp go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >tools.go
go mod tidy
MINOR=$(echo "${K8S#1.}" | cut -d. -f1)
# Write next to OUT and rename, so an interrupted build never leaves a truncated binary.
go build -ldflags "-s -w \
  -X k8s.io/component-base/version.gitVersion=v$K8S \
  -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=$MINOR \
  -X k8s.io/component-base/version.gitTreeState=clean" \
  -o "$OUT.tmp.$$" k8s.io/kubernetes/cmd/kube-apiserver
mv "$OUT.tmp.$$" "$OUT"
"$OUT" --version >&2

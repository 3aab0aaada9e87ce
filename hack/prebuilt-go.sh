#!/usr/bin/env bash
# Stands in for `go` in .goreleaser.yaml's builds (MCP_HUB_GO) in the
# publishing job of .github/workflows/release.yml: the binaries were built
# with cgo on their own runners (linux on Ubuntu, darwin on macOS) and
# downloaded into PREBUILT_DIR (default prebuilt/) as <goos>_<goarch>/mcp-hub;
# GoReleaser OSS has no prebuilt builder, so this copies the one for
# $GOOS/$GOARCH to the -o path instead of compiling. Any other go command
# goes to the real go.
set -euo pipefail
if [[ ${1:-} != build ]]; then
	exec go "$@"
fi
out=
while [[ $# -gt 0 ]]; do
	if [[ $1 == -o ]]; then
		out=$2
		shift
	fi
	shift
done
src=${PREBUILT_DIR:-prebuilt}/${GOOS:?}_${GOARCH:?}/mcp-hub
if [[ -z $out || ! -f $src ]]; then
	echo "hack/prebuilt-go.sh: no prebuilt $src for $GOOS/$GOARCH (or no -o)" >&2
	exit 1
fi
mkdir -p "$(dirname "$out")"
cp "$src" "$out"
chmod +x "$out"

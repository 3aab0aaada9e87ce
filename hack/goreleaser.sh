#!/usr/bin/env bash
# Prints the path of a cached GoReleaser v2 binary
# (github.com/goreleaser/goreleaser/v2), the release tool of .goreleaser.yaml:
# `make release-check` runs `goreleaser check` and a linux/amd64 snapshot
# build with it, and the release workflow (.github/workflows/release.yml)
# uses the same version. Builds it from the Go module proxy when missing
# (a few minutes on a fresh 2-core machine). Progress goes to stderr; stdout
# carries only the path.
#
#   GORELEASER=$(hack/goreleaser.sh) && "$GORELEASER" check
#
# GORELEASER_VERSION and GORELEASER_CACHE override the version and the cache
# directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub, outside the
# repo so that it survives `make clean` and fresh clones on one machine); the
# binary is <cache>/goreleaser-<version>.
set -euo pipefail

GORELEASER_VERSION=${GORELEASER_VERSION:-v2.15.1}
CACHE=${GORELEASER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
MOD=github.com/goreleaser/goreleaser/v2
PKG=$MOD
bin=$CACHE/goreleaser-$GORELEASER_VERSION

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.goreleaser-$GORELEASER_VERSION.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/goreleaser.sh: building $PKG@$GORELEASER_VERSION into $bin (first time only, a few minutes)" >&2
		start=$SECONDS
		# A throwaway module in a scratch dir, as hack/hydra.sh does: `go get`
		# in a module of our own resolves goreleaser's own requirements and
		# leaves this repo's go.mod/go.sum untouched. GOFLAGS/GOWORK of the
		# caller must not leak in. Build beside the binary and rename, so an
		# interrupted build never leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.goreleaser-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			export CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on
			"$GO" mod init goreleaserbuild
			"$GO" get "$PKG@$GORELEASER_VERSION"
			# -X main.version: `goreleaser --version` then names the version
			# (its own default is "dev"), which the logs of `make test` show.
			"$GO" build -trimpath -ldflags "-s -w -X main.version=$GORELEASER_VERSION" -o "$tmp/goreleaser" "$PKG"
		) >&2
		mv -f "$tmp/goreleaser" "$bin"
		echo "hack/goreleaser.sh: built goreleaser $GORELEASER_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

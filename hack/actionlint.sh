#!/usr/bin/env bash
# Prints the path of a cached actionlint binary
# (github.com/rhysd/actionlint/cmd/actionlint), the checker that
# `make release-check` runs on .github/workflows: the release workflow cannot
# run here, so its syntax, expressions and action inputs are checked instead.
# Builds it from the Go module proxy when missing (about a minute on a fresh
# 2-core machine). Progress goes to stderr; stdout carries only the path.
#
#   ACTIONLINT=$(hack/actionlint.sh) && "$ACTIONLINT" .github/workflows/*.yml
#
# ACTIONLINT_VERSION and ACTIONLINT_CACHE override the version and the cache
# directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub, outside the
# repo so that it survives `make clean` and fresh clones on one machine); the
# binary is <cache>/actionlint-<version>.
set -euo pipefail

ACTIONLINT_VERSION=${ACTIONLINT_VERSION:-v1.7.12}
CACHE=${ACTIONLINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
MOD=github.com/rhysd/actionlint
PKG=$MOD/cmd/actionlint
bin=$CACHE/actionlint-$ACTIONLINT_VERSION

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.actionlint-$ACTIONLINT_VERSION.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/actionlint.sh: building $PKG@$ACTIONLINT_VERSION into $bin (first time only, about a minute)" >&2
		start=$SECONDS
		# A throwaway module in a scratch dir, as hack/hydra.sh does: `go get`
		# in a module of our own resolves actionlint's own requirements and
		# leaves this repo's go.mod/go.sum untouched. GOFLAGS/GOWORK of the
		# caller must not leak in. Build beside the binary and rename, so an
		# interrupted build never leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.actionlint-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			export CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on
			"$GO" mod init actionlintbuild
			"$GO" get "$PKG@$ACTIONLINT_VERSION"
			"$GO" build -trimpath -ldflags "-s -w" -o "$tmp/actionlint" "$PKG"
		) >&2
		mv -f "$tmp/actionlint" "$bin"
		echo "hack/actionlint.sh: built actionlint $ACTIONLINT_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

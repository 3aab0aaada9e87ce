#!/usr/bin/env bash
# Prints the path of a cached Jaeger v2 binary
# (github.com/jaegertracing/jaeger/cmd/jaeger), the real trace backend the
# tracing test (test/tracing) exports to and reads traces back from. Builds it
# from the Go module proxy when missing (10+ minutes on a fresh 2-core
# machine). Progress goes to stderr; stdout carries only the path.
#
#   JAEGER=$(hack/jaeger.sh) && "$JAEGER" --config file:jaeger.yaml
#
# JAEGER_VERSION and JAEGER_CACHE override the version and the cache
# directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub, outside the
# repo so that it survives `make clean` and fresh clones on one machine); the
# binary is <cache>/jaeger-<version>.
set -euo pipefail

JAEGER_VERSION=${JAEGER_VERSION:-v1.76.0}
CACHE=${JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
MOD=github.com/jaegertracing/jaeger
PKG=$MOD/cmd/jaeger
bin=$CACHE/jaeger-$JAEGER_VERSION

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.jaeger-$JAEGER_VERSION.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/jaeger.sh: building $PKG@$JAEGER_VERSION into $bin (first time only, 10-20 min)" >&2
		start=$SECONDS
		# A throwaway module in a scratch dir: jaeger's go.mod carries replace
		# directives, so `go install pkg@version` refuses it; `go get` in a
		# module of our own resolves the same versions and leaves this repo's
		# go.mod/go.sum untouched. GOFLAGS/GOWORK of the caller must not leak
		# in. Build beside the binary and rename, so an interrupted build never
		# leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.jaeger-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			export CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on
			"$GO" mod init jaegerbuild
			"$GO" get "$PKG@$JAEGER_VERSION"
			"$GO" build -trimpath -ldflags "-s -w" -o "$tmp/jaeger" "$PKG"
		) >&2
		mv -f "$tmp/jaeger" "$bin"
		echo "hack/jaeger.sh: built jaeger $JAEGER_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

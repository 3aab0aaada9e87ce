#!/usr/bin/env bash
# Prints the path of a cached go-sdk conformance everything-server binary
# (github.com/modelcontextprotocol/go-sdk/conformance/everything-server), the
# server the official MCP conformance suite (test/conformance) is run
# against. Builds it from the Go module proxy when missing. Progress goes to
# stderr; stdout carries only the path.
#
#   SRV=$(hack/everything-server.sh) && "$SRV" -http=127.0.0.1:3001 -stateless=false
#
# Flags of the binary: -http ADDR serves streamable HTTP on ADDR (every path
# answers, e.g. http://ADDR/mcp; without -http it speaks stdio), and
# -stateless (default true; pass -stateless=false for sessions, which the
# server-to-client scenarios of the suite need).
#
# GO_SDK_VERSION and EVERYTHING_SERVER_CACHE override the version and the
# cache directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub, outside
# the repo so that it survives `make clean` and fresh clones on one machine);
# the binary is <cache>/everything-server-<version>.
set -euo pipefail

GO_SDK_VERSION=${GO_SDK_VERSION:-v1.8.0}
CACHE=${EVERYTHING_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
PKG=github.com/modelcontextprotocol/go-sdk/conformance/everything-server
bin=$CACHE/everything-server-$GO_SDK_VERSION

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.everything-server-$GO_SDK_VERSION.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/everything-server.sh: building $PKG@$GO_SDK_VERSION into $bin (first time only)" >&2
		start=$SECONDS
		# `go install pkg@version` builds in go-sdk's own module with its own
		# go.mod/go.sum, outside this repo's module (go.mod/go.sum stay
		# untouched); the workdir is a scratch dir, and GOFLAGS/GOWORK from
		# the caller (e.g. -mod=vendor) must not leak in. Install into a
		# scratch GOBIN beside the binary and rename, so an interrupted build
		# never leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.everything-server-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			GOBIN=$tmp CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on \
				"$GO" install -trimpath -ldflags "-s -w" "$PKG@$GO_SDK_VERSION"
		) >&2
		mv -f "$tmp/everything-server" "$bin"
		echo "hack/everything-server.sh: built everything-server $GO_SDK_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

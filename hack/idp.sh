#!/usr/bin/env bash
# Prints the path of a cached build of hack/idp, the OAuth 2.0 token service
# (RFC 8693 Token Exchange, client credentials, and sign-ins: authorization
# code with PKCE, rotated refresh tokens, RFC 7009 revocation; on
# zitadel/oidc's OpenID provider) the tests run against (internal/hubtest/idp). Builds
# it when missing (40-65 s on a fresh, busy 2-core machine, most of it
# zitadel's dependencies; a few seconds with the Go build cache warm).
# Progress goes to stderr; stdout carries only the path.
#
#   IDP=$(hack/idp.sh) && "$IDP" -config clients.json -addr 127.0.0.1:PORT
#
# The binary is <cache>/idp-<hash>, the hash of hack/idp's files (names and
# contents), so that a change to the sources builds a new one and every
# worktree of one machine shares the build of the same sources. IDP_CACHE
# overrides the cache directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub,
# outside the repo so that it survives `make clean` and fresh clones).
set -euo pipefail

src=$(cd "$(dirname "$0")/idp" && pwd)
CACHE=${IDP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
# The module's sources (go.mod, go.sum, *.go; not a binary a `go build`
# there left), sorted by name; a name goes into the hash with its content,
# so a renamed file changes it too.
hash=$(cd "$src" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 | LC_ALL=C sort -z |
	while IFS= read -r -d '' f; do printf '%s\0' "$f"; cat "$f"; done |
	sha256sum | cut -c1-16)
bin=$CACHE/idp-$hash

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.idp-$hash.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/idp.sh: building hack/idp into $bin (once per change of its sources)" >&2
		start=$SECONDS
		# hack/idp is a module of its own (go.mod/go.sum beside the
		# sources), so the hub's go.mod never carries zitadel. GOFLAGS and
		# GOWORK of the caller (e.g. -mod=vendor, a go.work) must not leak
		# in. Build beside the binary and rename, so an interrupted build
		# never leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.idp-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$src"
			CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on \
				"$GO" build -trimpath -ldflags "-s -w" -o "$tmp/idp" .
		) >&2
		mv -f "$tmp/idp" "$bin"
		echo "hack/idp.sh: built idp in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

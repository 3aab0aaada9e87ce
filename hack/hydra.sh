#!/usr/bin/env bash
# Prints the path of a cached Ory Hydra v2 binary (github.com/ory/hydra/v2),
# the real OAuth 2.1 / OpenID Connect authorization server the tests get
# JWT access tokens from (internal/hubtest/hydra). Builds it from the Go
# module proxy when missing (about 3 minutes on a fresh 2-core machine).
# Progress goes to stderr; stdout carries only the path.
#
#   HYDRA=$(hack/hydra.sh) && DSN=memory "$HYDRA" serve all --dev -c hydra.yaml
#
# HYDRA_VERSION and HYDRA_CACHE override the version and the cache
# directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub, outside the
# repo so that it survives `make clean` and fresh clones on one machine); the
# binary is <cache>/hydra-<version>.
set -euo pipefail

HYDRA_VERSION=${HYDRA_VERSION:-v2.3.0}
CACHE=${HYDRA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
MOD=github.com/ory/hydra/v2
PKG=$MOD
bin=$CACHE/hydra-$HYDRA_VERSION

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.hydra-$HYDRA_VERSION.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/hydra.sh: building $PKG@$HYDRA_VERSION into $bin (first time only, 2-5 min)" >&2
		start=$SECONDS
		# A throwaway module in a scratch dir: hydra's go.mod carries replace
		# directives, so `go install pkg@version` refuses it; `go get` in a
		# module of our own resolves the same versions and leaves this repo's
		# go.mod/go.sum untouched. GOFLAGS/GOWORK of the caller must not leak
		# in. Build beside the binary and rename, so an interrupted build never
		# leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.hydra-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			# cgo: the in-memory SQLite store (DSN=memory) the tests run
			# against is mattn/go-sqlite3. The tags are the ones Hydra's own
			# Makefile and Dockerfile build with.
			export CGO_ENABLED=1 GOFLAGS= GOWORK=off GO111MODULE=on
			"$GO" mod init hydrabuild
			# Hydra's go.mod swaps pop for Ory's fork; replace directives of a
			# dependency do not apply to us, so repeat it (the other one,
			# hydra-client-go => ./internal/httpclient, points into Hydra's
			# repo, outside its module zip; the published SDK it requires
			# stands in).
			"$GO" mod edit -replace github.com/gobuffalo/pop/v6=github.com/ory/pop/v6@v6.2.1-0.20241121111754-e5dfc0f3344b
			"$GO" get "$PKG@$HYDRA_VERSION"
			"$GO" build -trimpath -tags sqlite,sqlite_omit_load_extension \
				-ldflags "-s -w -X $MOD/driver/config.Version=$HYDRA_VERSION" \
				-o "$tmp/hydra" "$PKG"
		) >&2
		mv -f "$tmp/hydra" "$bin"
		echo "hack/hydra.sh: built hydra $HYDRA_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

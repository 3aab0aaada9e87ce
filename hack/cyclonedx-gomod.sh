#!/usr/bin/env bash
# Prints the path of a cached cyclonedx-gomod binary
# (github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod), which writes
# the release's CycloneDX SBOMs (.goreleaser.yaml sboms:) from the module list
# linked into each binary; `make release-check` runs it on a snapshot, the
# release workflow installs the same version. Builds it from the Go module
# proxy when missing (about 40 s on a fresh 2-core machine). Progress goes to stderr; stdout carries only the path.
#
#   CYCLONEDX=$(hack/cyclonedx-gomod.sh) && "$CYCLONEDX" bin -json bin/mcp-hub
#
# CYCLONEDX_VERSION and CYCLONEDX_CACHE override the version and the cache
# directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub, outside the
# repo so that it survives `make clean` and fresh clones on one machine); the
# binary is <cache>/cyclonedx-gomod-<version>.
set -euo pipefail

CYCLONEDX_VERSION=${CYCLONEDX_VERSION:-v1.10.0}
CACHE=${CYCLONEDX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}
GO=${GO:-go}
MOD=github.com/CycloneDX/cyclonedx-gomod
PKG=$MOD/cmd/cyclonedx-gomod
bin=$CACHE/cyclonedx-gomod-$CYCLONEDX_VERSION

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$CACHE/.cyclonedx-gomod-$CYCLONEDX_VERSION.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/cyclonedx-gomod.sh: building $PKG@$CYCLONEDX_VERSION into $bin (first time only, under a minute)" >&2
		start=$SECONDS
		# A throwaway module in a scratch dir, as hack/hydra.sh does: `go get`
		# in a module of our own resolves cyclonedx-gomod's own requirements and
		# leaves this repo's go.mod/go.sum untouched. GOFLAGS/GOWORK of the
		# caller must not leak in. Build beside the binary and rename, so an
		# interrupted build never leaves a half-written binary.
		tmp=$(mktemp -d "$CACHE/.cyclonedx-gomod-build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			export CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on
			"$GO" mod init cyclonedxbuild
			"$GO" get "$PKG@$CYCLONEDX_VERSION"
			"$GO" build -trimpath -ldflags "-s -w" -o "$tmp/cyclonedx-gomod" "$PKG"
		) >&2
		mv -f "$tmp/cyclonedx-gomod" "$bin"
		echo "hack/cyclonedx-gomod.sh: built cyclonedx-gomod $CYCLONEDX_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

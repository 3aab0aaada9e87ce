#!/usr/bin/env bash
# Prints the path of a cached helm binary, building it from the Go module
# proxy when missing. Progress goes to stderr; stdout carries only the path.
#
#   HELM=$(hack/helm.sh) && "$HELM" version
#
# HELM_VERSION and HELM_CACHE override the version and the cache directory
# (default: ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub/helm-<version>, outside
# the repo so that it survives `make clean` and fresh clones on one machine).
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE=${HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub/helm-$HELM_VERSION}
GO=${GO:-go}
bin=$CACHE/helm

if [[ ! -x $bin ]]; then
	mkdir -p "$CACHE"
	lock=$CACHE/.lock
	# Serialise concurrent builds (parallel go test packages, make -j).
	exec 9>"$lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ ! -x $bin ]]; then
		echo "hack/helm.sh: building helm $HELM_VERSION into $CACHE (first time only, takes a few minutes)" >&2
		start=$SECONDS
		# `go install pkg@version` builds helm's own module with its own
		# go.mod, outside this repo's module (go.mod/go.sum stay untouched);
		# the workdir is a scratch dir, and GOFLAGS/GOWORK from the caller
		# (e.g. -mod=vendor) must not leak in. Install into a scratch GOBIN
		# beside the binary and rename, so an interrupted build never leaves a
		# half-written helm.
		tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(
			cd "$tmp"
			GOBIN=$tmp CGO_ENABLED=0 GOFLAGS= GOWORK=off GO111MODULE=on \
				"$GO" install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
		) >&2
		mv -f "$tmp/helm" "$bin"
		echo "hack/helm.sh: built helm $HELM_VERSION in $((SECONDS - start))s" >&2
	fi
fi

echo "$bin"

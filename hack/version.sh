#!/usr/bin/env bash
# Prints the semver of a local build (`make build`, `make run`, the tests'
# hub binary), the same shape GoReleaser gives a snapshot
# (.goreleaser.yaml snapshot.version_template):
#
#   v0.1.0                    HEAD is the tag v0.1.0, clean work tree
#   v0.1.1-dev+1a2b3c4        commits after v0.1.0 (the next patch, pre-release)
#   v0.0.1-dev+1a2b3c4        no v* tag yet
#   v0.1.1-dev+1a2b3c4.dirty  uncommitted changes
#   v0.0.0-dev                not a git checkout
#
# Only tags vMAJOR.MINOR.PATCH count: a release is cut by pushing one (docs/contributors.md
# "Releases").
set -euo pipefail
cd "$(dirname "$0")/.."

if ! hash=$(git rev-parse --short=7 HEAD 2>/dev/null); then
	echo v0.0.0-dev
	exit 0
fi
dirty=
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
	dirty=.dirty
fi
if tag=$(git describe --tags --exact-match --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null) && [[ -z $dirty ]]; then
	echo "$tag"
	exit 0
fi
last=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null || echo v0.0.0)
last=${last%%-*}
IFS=. read -r major minor patch <<<"${last#v}"
echo "v$major.$minor.$((patch + 1))-dev+$hash$dirty"

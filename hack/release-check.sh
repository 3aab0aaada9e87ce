#!/usr/bin/env bash
# `make release-check`: the release of .goreleaser.yaml cut as a snapshot on
# this machine, everything but the image and the upload, and checked:
#
#   - goreleaser check and actionlint (the workflows); no linked package
#     uses cgo;
#   - six binaries, CGO_ENABLED=0, each of the format `file` must name;
#   - linux/amd64 run here and linux/arm64 under qemu-user print the same
#     version, a snapshot semver with its commit, in the shape of the line
#     docs/install.md shows under `mcp-hub version`;
#   - six archives (tar.gz, zip for windows), six SBOMs, checksums.txt
#     naming them all;
#   - the chart packaged at the same version, as the workflow pushes it to
#     an OCI registry.
#
# GoReleaser reads the commit only in a checkout with a remote: a local
# clone without one is lent the project's URL through git's environment
# config (the repo's config is not touched).
set -euo pipefail
cd "$(dirname "$0")/.."

gr=$(hack/goreleaser.sh)
al=$(hack/actionlint.sh)
helm=$(hack/helm.sh)
sbom=$(hack/cyclonedx-gomod.sh)
start=$SECONDS

echo "goreleaser check"
"$gr" check --quiet
echo "actionlint"
"$al" -shellcheck= -pyflakes= .github/workflows/*.yml

# No module the hub links may use cgo (with it on, as on a machine with a
# C compiler): else `go install` would need one, and a CGO_ENABLED=0
# build could silently take another code path.
cgo=$(CGO_ENABLED=1 go list -deps -f '{{if and (not .Standard) .CgoFiles}}{{.ImportPath}}{{end}}' ./cmd/mcp-hub)
[[ -z $cgo ]] || { echo "packages with cgo linked into mcp-hub: $cgo"; exit 1; }

if [[ -z $(git remote) ]]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/purko-io/mcp-hub.git
fi
echo "goreleaser release --snapshot --skip=docker,publish (six targets, archives, SBOMs, checksums)"
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
ln -s "$sbom" "$bindir/cyclonedx-gomod"
PATH=$bindir:$PATH "$gr" release --snapshot --clean --skip=docker,publish,announce --timeout 30m >dist.log 2>&1 || {
	cat dist.log
	exit 1
}

# What `file` says of each target's binary.
declare -A want=(
	[linux_amd64]='ELF 64-bit LSB executable, x86-64, .*statically linked'
	[linux_arm64]='ELF 64-bit LSB executable, ARM aarch64, .*statically linked'
	[darwin_amd64]='Mach-O 64-bit x86_64 executable'
	[darwin_arm64]='Mach-O 64-bit arm64 executable'
	[windows_amd64]='PE32\+ executable \(console\) x86-64'
	[windows_arm64]='PE32\+ executable \(console\) Aarch64'
)
for t in "${!want[@]}"; do
	bins=(dist/mcp-hub_"$t"_*/mcp-hub*)
	[[ ${#bins[@]} == 1 && -f ${bins[0]} ]] || { echo "$t: want one binary, found: ${bins[*]}"; exit 1; }
	desc=$(file -b "${bins[0]}")
	[[ $desc =~ ${want[$t]} ]] || { echo "$t: file says: $desc"; exit 1; }
	printf '  %-14s %s\n' "$t" "${desc%%,*}, $(du -h "${bins[0]}" | cut -f1)"
done

# The version: what the binaries print, and the shape the docs show.
shape() { sed -E 's/^mcp-hub v[0-9]+\.[0-9]+\.[0-9]+[^ ]* \(commit [0-9a-f]{7}(-dirty)?, built [0-9]{4}-[0-9]{2}-[0-9]{2}\)$/mcp-hub vX (commit C, built D)/'; }
amd=$(dist/mcp-hub_linux_amd64_*/mcp-hub version)
arm=$(qemu-aarch64 dist/mcp-hub_linux_arm64_*/mcp-hub version)
echo "  linux/amd64: $amd"
echo "  linux/arm64 (qemu-aarch64): $arm"
[[ $amd == "$arm" ]] || { echo "linux/amd64 and linux/arm64 print different versions"; exit 1; }
[[ $amd =~ ^mcp-hub\ v[0-9]+\.[0-9]+\.[0-9]+-dev\+[0-9a-f]{7}.*\(commit\ [0-9a-f]{7}(-dirty)?,\ built\ [0-9]{4}-[0-9]{2}-[0-9]{2}\)$ ]] || {
	echo "unexpected snapshot version: $amd"
	exit 1
}
doc=$(grep -A1 -F '$ mcp-hub version' docs/install.md | grep '^mcp-hub ' | head -1)
[[ -n $doc ]] || { echo "docs/install.md shows no output under '\$ mcp-hub version'"; exit 1; }
[[ $(shape <<<"$doc") == "$(shape <<<"$amd")" && $(shape <<<"$doc") == 'mcp-hub vX (commit C, built D)' ]] || {
	echo "docs/install.md shows '$doc'; the binary prints '$amd'"
	exit 1
}

# The static-analysis tool's Python parser (WebAssembly, wazero's
# compiler for each architecture) in the release binaries: through the
# stdio face, a call on code with a shell command, and an eval in a comment
# and in a string that must not count.
analyse() {
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"release-check","version":"1"}}}'
	local call='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"static-analysis","arguments":{"language":"python","code":"import os\nos.system(cmd)  # eval(x)\ns = \"eval(y)\"\n"}}}'
	local line
	# stdin stays open until the answer is read: the hub ends a call whose
	# client has gone.
	coproc HUB { timeout 120 "$@" stdio --log-level warn 2>/dev/null; }
	printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$call" >&"${HUB[1]}"
	while IFS= read -r -t 90 line <&"${HUB[0]}"; do
		if [[ $line == *'"id":2'* ]]; then
			echo "$line"
			break
		fi
	done
	kill "$HUB_PID" 2>/dev/null || true
	wait "$HUB_PID" 2>/dev/null || true
}
for t in amd64 arm64; do
	run=(dist/mcp-hub_linux_"$t"_*/mcp-hub)
	[[ $t == arm64 ]] && run=(qemu-aarch64 "${run[@]}")
	out=$(analyse "${run[@]}")
	rules=$(grep -o '\\"rule\\":\\"[A-Z0-9]*' <<<"$out" | sed 's/.*"//' | sort | tr '\n' ' ')
	echo "  linux/$t static-analysis of Python: ${rules:-nothing}"
	[[ $rules == "PY007 " ]] || { echo "linux/$t: want exactly PY007 from static-analysis, got: $out"; exit 1; }
done

archives=$(grep -cE '\.(tar\.gz|zip)$' dist/checksums.txt)
sboms=$(grep -c '\.cdx\.json$' dist/checksums.txt)
[[ $archives == 6 && $sboms == 6 ]] || { cat dist/checksums.txt; echo "want 6 archives and 6 SBOMs"; exit 1; }
(cd dist && sha256sum --quiet -c checksums.txt)
# Each archive carries the licences of the C code in the Python parser.
for a in dist/mcp-hub_*.tar.gz; do
	# grep reads the whole listing (no -q): an early exit would kill tar with
	# SIGPIPE, which pipefail reports as a missing file.
	tar tzf "$a" | grep -x 'third_party/python-parser/NOTICE' >/dev/null || { echo "$a lacks third_party/python-parser/NOTICE"; exit 1; }
done
for a in dist/mcp-hub_*.zip; do # a zip names its files uncompressed in its central directory
	grep -aq 'third_party/python-parser/NOTICE' "$a" || { echo "$a lacks third_party/python-parser/NOTICE"; exit 1; }
done

# The chart at the release's version (the workflow: helm push to
# oci://ghcr.io/purko-io/charts).
version=${amd#mcp-hub v}
version=${version%% *}
"$helm" package charts/mcp-hub --version "$version" --app-version "$version" -d dist >/dev/null
chart=dist/mcp-hub-$version.tgz
[[ $("$helm" show chart "$chart" | sed -n 's/^version: //p') == "$version" ]] || { echo "$chart: wrong version"; exit 1; }
echo "dist/: 6 archives, 6 SBOMs, checksums.txt, $(basename "$chart") ($((SECONDS - start))s)"
rm -f dist.log

#!/bin/sh
# Builds python.wasm: the tree-sitter runtime, tree-sitter-python's grammar
# and shim.c compiled to one WebAssembly module (wasm32-wasi, a reactor),
# which internal/pyparse embeds and runs with wazero. Run it (or
# `make pyparse-wasm`) after changing shim.c or the versions below; it
# needs Debian's clang-14, lld-14, wasi-libc and libclang-rt-14-dev-wasm32,
# and fetches the C sources through the Go module proxy. It rewrites
# python.wasm.sum, which a test compares with the embedded module and
# this directory's sources, so a stale module cannot be committed.
set -eu
TS_VERSION=v0.25.0            # github.com/tree-sitter/go-tree-sitter: the runtime's C sources
PY_VERSION=v0.23.6            # github.com/tree-sitter/tree-sitter-python: the grammar
here=$(cd "$(dirname "$0")" && pwd)
ts=$(go mod download -json github.com/tree-sitter/go-tree-sitter@$TS_VERSION | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
py=$(go mod download -json github.com/tree-sitter/tree-sitter-python@$PY_VERSION | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
cc=${CC:-clang-14}
out=$here/../python.wasm
$cc --target=wasm32-wasi -isystem /usr/include/wasm32-wasi -L/usr/lib/wasm32-wasi -O2 -mexec-model=reactor \
	-fvisibility=hidden -ffunction-sections -fdata-sections \
	-I"$ts/include" -I"$ts/src" -I"$py/src" \
	-D_POSIX_C_SOURCE=200112L -D_DEFAULT_SOURCE -DHAVE_ENDIAN_H -DNDEBUG \
	-Wl,--gc-sections -Wl,--strip-all -Wl,-z,stack-size=1048576 \
	-o "$out" "$here/shim.c" "$ts/src/lib.c" "$py/src/parser.c" "$py/src/scanner.c"
{
	echo "tree-sitter $TS_VERSION"
	echo "tree-sitter-python $PY_VERSION"
	echo "compiler $($cc --version | head -1)"
	echo "shim.c $(sha256sum "$here/shim.c" | cut -d' ' -f1)"
	echo "python.wasm $(sha256sum "$out" | cut -d' ' -f1)"
} > "$here/../python.wasm.sum"

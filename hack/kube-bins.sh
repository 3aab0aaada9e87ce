#!/usr/bin/env bash
# Ensures the kube-apiserver and etcd binaries used by integration tests
# (internal/kubetest) exist in the user cache, building each only when missing.
# Prints, on stdout:
#   KUBE_APISERVER=<path>
#   ETCD=<path>
# Progress goes to stderr. Environment:
#   K8S (default 1.34.4), ETCD_VERSION (default 3.6.4),
#   MCPHUB_KUBE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub)
# internal/kubetest finds the same paths by itself; MCPHUB_KUBE_APISERVER and
# MCPHUB_ETCD override them (and are honoured here too: nothing is built then).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S=${K8S:-1.34.4}
ETCD_VERSION=${ETCD_VERSION:-3.6.4}
CACHE=${MCPHUB_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub}

KAS=${MCPHUB_KUBE_APISERVER:-$CACHE/kube-apiserver-v$K8S}
ETCD=${MCPHUB_ETCD:-$CACHE/etcd-v$ETCD_VERSION}

build() { # name path script version-var=value
  local name=$1 path=$2 script=$3 start
  if [ -x "$path" ]; then
    echo "kube-bins: $name: $path (cached)" >&2
    return
  fi
  echo "kube-bins: building $name -> $path (this can take a while) ..." >&2
  start=$(date +%s)
  env "$4" OUT="$path" "$HERE/$script" >&2
  echo "kube-bins: built $name in $(($(date +%s) - start))s" >&2
}

build kube-apiserver "$KAS" build-kube-apiserver.sh "K8S=$K8S"
build etcd "$ETCD" build-etcd.sh "ETCD_VERSION=$ETCD_VERSION"

echo "KUBE_APISERVER=$KAS"
echo "ETCD=$ETCD"

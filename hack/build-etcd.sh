#!/usr/bin/env bash
# Builds a minimal single-member etcd server from the Go module proxy (no apt, no git):
# a throwaway module with a tiny main on go.etcd.io/etcd/server/v3/embed.
#
# The binary accepts the usual etcd flags that a test harness needs:
#   --name --data-dir --listen-client-urls --advertise-client-urls
#   --listen-peer-urls --initial-advertise-peer-urls --initial-cluster
#   --log-level --unsafe-no-fsync --quota-backend-bytes --version
# and stops cleanly on SIGTERM/SIGINT.
#
# Usage: [ETCD_VERSION=3.6.4] OUT=path/to/etcd hack/build-etcd.sh
set -euo pipefail
ETCD_VERSION=${ETCD_VERSION:-3.6.4}
OUT=${OUT:?set OUT to the path of the binary to write}
case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac
mkdir -p "$(dirname "$OUT")"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
export GOFLAGS=-mod=mod GOWORK=off

printf 'module local/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD_VERSION" >go.mod
cat >main.go <<'GO'
// Command etcd is a minimal single-member etcd server for tests.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/embed"
)

func urls(name, s string) []url.URL {
	var out []url.URL
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		u, err := url.Parse(p)
		if err != nil {
			log.Fatalf("--%s: %v", name, err)
		}
		out = append(out, *u)
	}
	return out
}

func main() {
	cfg := embed.NewConfig()
	name := flag.String("name", cfg.Name, "member name")
	dataDir := flag.String("data-dir", "", "data directory (default <name>.etcd)")
	lcu := flag.String("listen-client-urls", "http://127.0.0.1:2379", "client listen URLs")
	acu := flag.String("advertise-client-urls", "", "advertised client URLs (default: listen-client-urls)")
	lpu := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "peer listen URLs")
	apu := flag.String("initial-advertise-peer-urls", "", "advertised peer URLs (default: listen-peer-urls)")
	ic := flag.String("initial-cluster", "", "initial cluster (default: <name>=<initial-advertise-peer-urls>)")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn, error")
	noFsync := flag.Bool("unsafe-no-fsync", false, "disable fsync (tests only)")
	quota := flag.Int64("quota-backend-bytes", 0, "backend quota in bytes (0 = default)")
	showVersion := flag.Bool("version", false, "print version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Printf("etcd Version: %s (embed)\n", version.Version)
		return
	}

	cfg.Name = *name
	cfg.Dir = *dataDir
	if cfg.Dir == "" {
		cfg.Dir = cfg.Name + ".etcd"
	}
	cfg.ListenClientUrls = urls("listen-client-urls", *lcu)
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	if *acu != "" {
		cfg.AdvertiseClientUrls = urls("advertise-client-urls", *acu)
	}
	cfg.ListenPeerUrls = urls("listen-peer-urls", *lpu)
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	if *apu != "" {
		cfg.AdvertisePeerUrls = urls("initial-advertise-peer-urls", *apu)
	}
	if *ic != "" {
		cfg.InitialCluster = *ic
	} else {
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	}
	cfg.LogLevel = *logLevel
	cfg.UnsafeNoFsync = *noFsync
	if *quota > 0 {
		cfg.QuotaBackendBytes = *quota
	}

	// Register before starting, so that an early SIGTERM still stops etcd cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("start etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd %s ready, serving clients on %s\n", version.Version, *lcu)
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v before ready, shutting down\n", s)
		e.Close()
		return
	case <-time.After(60 * time.Second):
		e.Close()
		log.Fatal("etcd did not become ready within 60s")
	}
	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v, shutting down\n", s)
		e.Close()
	case err := <-e.Err():
		e.Close()
		log.Fatalf("etcd: %v", err)
	}
}
GO
go mod tidy
go build -trimpath -ldflags "-s -w" -o "$OUT.tmp.$$" .
mv "$OUT.tmp.$$" "$OUT"
"$OUT" --version >&2

// Command bench measures what the hub costs on the path of a tool call: the
// same calls go to a fast upstream directly and through the hub, in one run,
// and every figure is reported against that direct baseline. The hub and the
// upstream run as separate processes on loopback, as in production.
//
//	go run ./test/bench [-duration 3s] [-concurrency 1,16,64] [-notify-calls 200] [-out bench-results.json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	duration := flag.Duration("duration", defaultDuration, "measuring time per scenario")
	conc := flag.String("concurrency", "1,16,64", "concurrent sessions per scenario")
	out := flag.String("out", "", "write the results as JSON to this file")
	hubBin := flag.String("hub", "", "mcp-hub binary (default: build it)")
	notifyCalls := flag.Int("notify-calls", defaultNotifyCalls, "calls per target in the notification latency benchmark (0: skip it)")
	flag.Parse()

	if role := os.Getenv(roleEnv); role != "" {
		if err := serveRole(role); err != nil {
			fmt.Fprintln(os.Stderr, role+":", err)
			os.Exit(1)
		}
		return
	}
	var levels []int
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "-concurrency: %q is not a positive number\n", s)
			os.Exit(2)
		}
		levels = append(levels, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *notifyCalls <= 0 {
		*notifyCalls = -1 // Config: negative skips, 0 is the default
	}
	rep, err := Run(ctx, Config{Duration: *duration, Concurrency: levels, HubBin: *hubBin, Progress: os.Stderr, NotifyCalls: *notifyCalls})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	rep.WriteTable(os.Stdout)
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Printf("\nresults written to %s\n", *out)
	}
}

// serveRole serves the fast upstream, or a bare reverse proxy in front of
// it, on a loopback port and prints its URL on stdout.
func serveRole(role string) error {
	var h http.Handler
	switch role {
	case "upstream":
		h = upstreamHandler()
	case "proxy":
		target, err := url.Parse(os.Getenv(proxyTargetEnv))
		if err != nil {
			return err
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}
		h = rp
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, h)
}

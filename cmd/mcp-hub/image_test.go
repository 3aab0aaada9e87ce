package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// imageConfig is where the Dockerfile puts the image's own config, and
// imageConfigSource the file of the repository it copies there.
const (
	imageConfig       = "/etc/mcp-hub/config.yaml"
	imageConfigSource = "docker/config.yaml"
)

// dockerfile is what the test needs of the Dockerfile: the final stage's
// ENTRYPOINT and CMD (exec form) and its COPY destinations by source.
type dockerfile struct {
	entrypoint, cmd []string
	copies          map[string]string // destination -> source (build-context files only)
}

// parseDockerfile reads ENTRYPOINT, CMD and COPY lines of the last stage.
// Continuation lines are not joined: the lines it reads are one-liners.
func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	for line := range strings.Lines(string(data)) {
		instr, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			d = dockerfile{copies: map[string]string{}}
		case "ENTRYPOINT", "CMD":
			var argv []string
			if err := json.Unmarshal([]byte(rest), &argv); err != nil {
				t.Fatalf("%s: %s %s is not in exec form (a JSON array): %v", path, instr, rest, err)
			}
			if strings.ToUpper(instr) == "CMD" {
				d.cmd = argv
			} else {
				d.entrypoint = argv
			}
		case "COPY":
			f := strings.Fields(rest)
			if len(f) == 2 && !strings.HasPrefix(f[0], "--") {
				d.copies[f[1]] = f[0]
			}
		}
	}
	return d
}

// TestImageDefaultStartsAHub: `docker run -p 8080:8080 ghcr.io/purko-io/mcp-hub`
// must start a hub that answers, though it listens on 0.0.0.0, where the
// hub refuses to start without a way to authenticate callers. There is no
// container engine here, so the test reads the Dockerfile: its CMD must
// name the image's config, which the Dockerfile copies from
// docker/config.yaml; that config must admit anonymous callers at
// restricted at most (secure by default: never full autonomy for whoever
// reaches the port); and the hub binary, run with exactly the CMD's
// arguments (a free port instead of 8080, the repository's file for the
// image's path), must come up on 0.0.0.0 and serve its listing to a
// caller without credentials.
func TestImageDefaultStartsAHub(t *testing.T) {
	root := filepath.Join("..", "..")
	d := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if !slices.Equal(d.entrypoint, []string{"/mcp-hub"}) {
		t.Fatalf("ENTRYPOINT %q, want [/mcp-hub]", d.entrypoint)
	}
	if src := d.copies[imageConfig]; src != imageConfigSource {
		t.Fatalf("the Dockerfile copies %q to %s, want %s", src, imageConfig, imageConfigSource)
	}
	if len(d.cmd) == 0 || d.cmd[0] != "serve" || flagValue(d.cmd, "--config") != imageConfig {
		t.Fatalf("CMD %q: want serve with --config %s", d.cmd, imageConfig)
	}
	listen := flagValue(d.cmd, "--listen")
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host != "0.0.0.0" {
		t.Fatalf("CMD --listen %q: want 0.0.0.0:PORT, so the container's port is reachable", listen)
	}

	source := filepath.Join(root, imageConfigSource)
	cfg, err := config.Load(source)
	if err != nil {
		t.Fatal(err)
	}
	an := cfg.Auth.Anonymous
	if an == nil || !an.Enabled {
		t.Fatalf("%s: auth.anonymous is not enabled: the hub would refuse to start on 0.0.0.0", source)
	}
	if lvl, _ := toolspec.CanonicalLevel(an.MaxLevel); lvl != "restricted" && lvl != "manual" {
		t.Errorf("%s: auth.anonymous.maxLevel %q: callers without credentials on a public port get restricted at most", source, an.MaxLevel)
	}
	if len(cfg.Auth.Tokens) > 0 || len(cfg.Servers) > 0 {
		t.Errorf("%s: the image's config holds tokens or servers; it must hold neither", source)
	}

	// The CMD's arguments, with a free port on every interface and a copy
	// of the image's config (the hub keeps servers registered through its
	// API beside its config file: never in the repository).
	data, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	configCopy := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configCopy, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(d.cmd[1:])
	for i := range args {
		switch {
		case i > 0 && args[i-1] == "--listen":
			args[i] = "0.0.0.0:0"
		case i > 0 && args[i-1] == "--config":
			args[i] = configCopy
		}
	}
	h := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, Listen: "0.0.0.0:0", Args: args, Timeout: 20 * time.Second})
	u, err := url.Parse(h.Base)
	if err != nil {
		t.Fatal(err)
	}
	// Go's listener on 0.0.0.0 takes IPv6 too and reports [::].
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsUnspecified() {
		t.Fatalf("the hub listens on %s, want every interface (0.0.0.0, the image's address)", u.Host)
	}
	base := "http://127.0.0.1:" + u.Port()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200 (last: %v)\n%s", err, hubtest.Tail(h.Output()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	l, err := hubtest.FetchListing(t.Context(), http.DefaultClient, base, "")
	if err != nil {
		t.Fatalf("a caller without credentials cannot read the listing: %v", err)
	}
	// No upstreams, but the hub's own tools (static-analysis) are there.
	if l.TotalTools == 0 {
		t.Errorf("the image's hub lists no tools: %s", l.Summary())
	}
}

// flagValue is the value after the last flag in argv ("" when absent).
func flagValue(argv []string, flag string) string {
	v := ""
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag {
			v = argv[i+1]
		}
	}
	return v
}

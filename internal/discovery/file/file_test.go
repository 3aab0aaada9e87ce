package file

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	// Write-and-rename, as editors and Kubernetes volumes do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, ch <-chan discovery.Snapshot) discovery.Snapshot {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no snapshot within 5s")
	}
	return discovery.Snapshot{}
}

func names(s discovery.Snapshot) []string {
	var n []string
	for _, srv := range s.Servers {
		n = append(n, srv.Name)
	}
	return n
}

func TestReloadOnEditKeepsLastGoodOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hub.yaml")
	write(t, path, "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan discovery.Snapshot)
	done := make(chan struct{})
	go func() { defer close(done); New(path, cfg, zerolog.Nop()).Run(ctx, ch) }()

	if got := names(next(t, ch)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("first snapshot %v", got)
	}
	write(t, path, "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n- name: b\n  command: echo\n")
	if got := names(next(t, ch)); len(got) != 2 || got[1] != "b" {
		t.Fatalf("after adding b: %v", got)
	}
	// An invalid edit must not produce a snapshot.
	write(t, path, "servers:\n- name: a\n  transport: grpc\n")
	select {
	case s := <-ch:
		t.Fatalf("invalid edit produced snapshot %v", names(s))
	case <-time.After(500 * time.Millisecond):
	}
	write(t, path, "servers: []\n")
	if got := names(next(t, ch)); len(got) != 0 {
		t.Fatalf("after removing all: %v", got)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("source did not stop with its context")
	}
}

func TestTokenFileRotationReloads(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	write(t, tok, "one")
	path := filepath.Join(dir, "hub.yaml")
	write(t, path, "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n  token: {file: "+tok+"}\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan discovery.Snapshot)
	go New(path, cfg, zerolog.Nop()).Run(ctx, ch)
	if s := next(t, ch); s.Servers[0].BearerToken.Reveal() != "one" {
		t.Fatal("first token wrong")
	}
	write(t, tok, "two")
	if s := next(t, ch); s.Servers[0].BearerToken.Reveal() != "two" {
		t.Fatal("rotated token not picked up")
	}
}

// TestReloadKeepsServersOnHalfWrittenFile: an edit caught mid-write (an
// editor or a copy that truncates first, a ConfigMap sync) must not drop
// every upstream. Each bad edit is refused, no snapshot is sent, and the
// source keeps applying the next good edit.
func TestReloadKeepsServersOnHalfWrittenFile(t *testing.T) {
	const good = "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n- name: b\n  command: echo\n"
	cases := []struct {
		name string
		edit func(t *testing.T, path string)
	}{
		{"truncated to zero bytes in place", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"zero-byte file renamed in", func(t *testing.T, path string) { write(t, path, "") }},
		{"whitespace only", func(t *testing.T, path string) { write(t, path, "  \n\n   \n") }},
		{"comments only", func(t *testing.T, path string) { write(t, path, "# servers follow\n") }},
		{"no servers key", func(t *testing.T, path string) { write(t, path, "naming:\n  prefix: never\n") }},
		{"servers key without value", func(t *testing.T, path string) { write(t, path, "servers:\n") }},
		{"truncated YAML", func(t *testing.T, path string) { write(t, path, good[:len(good)-10]+"\n  url: [") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hub.yaml")
			write(t, path, good)
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := make(chan discovery.Snapshot)
			go New(path, cfg, zerolog.Nop()).Run(ctx, ch)
			if got := names(next(t, ch)); len(got) != 2 {
				t.Fatalf("first snapshot %v", got)
			}
			tc.edit(t, path)
			select {
			case s := <-ch:
				t.Fatalf("a half-written file produced snapshot %v; the servers must stay", names(s))
			case <-time.After(500 * time.Millisecond):
			}
			write(t, path, "servers:\n- name: c\n  command: echo\n")
			if got := names(next(t, ch)); len(got) != 1 || got[0] != "c" {
				t.Fatalf("the next good edit gave %v, want [c]", got)
			}
		})
	}
}

// TestReloadEmptyServersListRemovesAll: "servers: []" is a real edit, not
// a half-written file, even though it leaves nothing.
func TestReloadEmptyServersListRemovesAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.yaml")
	write(t, path, "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan discovery.Snapshot)
	go New(path, cfg, zerolog.Nop()).Run(ctx, ch)
	next(t, ch)
	write(t, path, "# every server removed\nservers: []\nnaming: {prefix: never}\n")
	if got := next(t, ch); len(got.Servers) != 0 {
		t.Fatalf("after servers: [] the snapshot holds %v", names(got))
	}
}

// TestLogFileBesideConfigDoesNotLoop: the hub's log written into the
// config's directory must not make it reload, or a rejected edit would be
// logged, seen as an edit, rejected and logged again, forever.
func TestLogFileBesideConfigDoesNotLoop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hub.yaml")
	write(t, path, "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "hub.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan discovery.Snapshot)
	done := make(chan struct{})
	go func() { defer close(done); New(path, cfg, zerolog.New(logFile)).Run(ctx, ch) }()
	next(t, ch)
	write(t, path, "servers:\n- name: a\n  transport: grpc\n")
	time.Sleep(2 * time.Second) // a loop would log a line every settle period
	cancel()
	<-done
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "config edit rejected"); n != 1 {
		t.Fatalf("%d rejection lines for one bad edit:\n%s", n, b)
	}
}

package registrations

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/discovery"
)

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Entry
		want string // prefix of the error; empty: valid
	}{
		{"url entry", Entry{Name: "gh", URL: "http://127.0.0.1:8000/mcp"}, ""},
		{"bearer url entry", Entry{Name: "gh", URL: "https://h/mcp", Auth: "Bearer", SecretRef: "GH_TOKEN"}, ""},
		{"image entry", Entry{Name: "img", Image: "ghcr.io/a/b:1", Port: 9000}, ""},
		{"no name", Entry{URL: "http://h/mcp"}, "name: is required"},
		{"bad name", Entry{Name: "a/b", URL: "http://h/mcp"}, "name: "},
		{"no name nor url", Entry{}, "name: is required"},
		{"neither url nor image", Entry{Name: "x"}, "url: one of url"},
		{"both", Entry{Name: "x", URL: "http://h/mcp", Image: "i"}, "url: set either"},
		{"relative url", Entry{Name: "x", URL: "/mcp"}, "url: "},
		{"url with credentials", Entry{Name: "x", URL: "http://u:p@h/mcp"}, "url: must not carry credentials"},
		{"port with url", Entry{Name: "x", URL: "http://h/mcp", Port: 80}, "port: only with image"},
		{"bad port", Entry{Name: "x", Image: "i", Port: 70000}, "port: 70000"},
		{"bad auth", Entry{Name: "x", URL: "http://h/mcp", Auth: "basic"}, `auth: "basic"`},
		{"bearer without secretRef", Entry{Name: "x", URL: "http://h/mcp", Auth: "bearer"}, "secretRef: is required"},
		{"Purko's image form", Entry{Name: "x", Image: "quay.io/o/i:1", Port: 8000, Auth: "none", HostNetwork: true, Args: []string{}}, ""},
		{"secretRef with auth none", Entry{Name: "x", URL: "http://h/mcp", Auth: "none", SecretRef: "S"}, ""},
	} {
		err := tc.e.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q...", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "u:p@") {
			t.Errorf("%s: credentials in the error: %v", tc.name, err)
		}
	}
}

func TestFilePath(t *testing.T) {
	if got, _ := FilePath("/etc/hub/hub.yaml"); got != "/etc/hub/hub.registered.yaml" {
		t.Errorf("beside the config: %s", got)
	}
	t.Setenv("XDG_STATE_HOME", "/state")
	if got, _ := FilePath(""); got != "/state/mcp-hub/registered.yaml" {
		t.Errorf("embedded default: %s", got)
	}
}

// TestFileUpsertDeleteAndReopen writes through File, sees each write as a
// snapshot of its source, and reads the file again as a restarted hub does.
func TestFileUpsertDeleteAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.registered.yaml")
	t.Setenv("REG_TEST_TOKEN", "tok-123")
	f, err := OpenFile(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan discovery.Snapshot)
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, out) }()
	defer func() { cancel(); <-done }()
	next := func() discovery.Snapshot {
		t.Helper()
		select {
		case s := <-out:
			return s
		case <-time.After(5 * time.Second):
			t.Fatal("no snapshot")
			return discovery.Snapshot{}
		}
	}
	if s := next(); s.Source != SourceName || len(s.Servers) != 0 {
		t.Fatalf("first snapshot: %+v", s)
	}
	for _, e := range []Entry{
		{Name: "a", URL: "http://127.0.0.1:1/mcp", Auth: "bearer", SecretRef: "REG_TEST_TOKEN", Icon: "A"},
		{Name: "b", URL: "http://127.0.0.1:2/mcp", Auth: "bearer", SecretRef: "REG_TEST_MISSING"},
		{Name: "a", URL: "http://127.0.0.1:3/mcp", Auth: "bearer", SecretRef: "REG_TEST_TOKEN"},
	} {
		if err := f.Upsert(ctx, e); err != nil {
			t.Fatal(err)
		}
		next()
	}
	if err := f.Upsert(ctx, Entry{Name: "img", Image: "i"}); err == nil || !strings.HasPrefix(err.Error(), "image: ") {
		t.Errorf("image on a laptop: %v", err)
	}
	specs := f.specs()
	if len(specs) != 2 || specs[0].Name != "a" || specs[0].URL != "http://127.0.0.1:3/mcp" || specs[0].BearerToken.Reveal() != "tok-123" ||
		specs[1].Problem == "" || !strings.Contains(specs[1].Problem, "REG_TEST_MISSING") {
		t.Fatalf("specs: %+v", specs)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "tok-123") {
		t.Fatalf("the token is in the file:\n%s", b)
	}
	if err := f.Delete(ctx, "nosuch"); err != ErrNotFound {
		t.Errorf("delete unknown: %v", err)
	}
	if err := f.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if s := next(); len(s.Servers) != 1 || s.Servers[0].Name != "a" {
		t.Fatalf("after delete: %+v", s.Servers)
	}
	again, err := OpenFile(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if has, _ := again.Has(ctx, "a"); !has || len(again.specs()) != 1 {
		t.Fatalf("reopened: %+v", again.entries)
	}
}

func TestDecodeEncodeKeepsTheFormat(t *testing.T) {
	for _, tc := range []struct{ raw string }{
		{`[{"name":"a","url":"http://h/mcp"}]`},
		{"- name: a\n  url: http://h/mcp\n"},
	} {
		list, isYAML, err := decodeList(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, map[string]any{"name": "b", "url": "http://b/mcp"})
		out, err := encodeList(list, isYAML)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(tc.raw, "[") != strings.HasPrefix(out, "[") || !strings.Contains(out, "http://h/mcp") || indexByName(list, "b") != 1 {
			t.Errorf("%q -> %q", tc.raw, out)
		}
	}
	if _, _, err := decodeList("{not: a list}"); err == nil || !strings.Contains(err.Error(), "key servers") {
		t.Errorf("a map: %v", err)
	}
}

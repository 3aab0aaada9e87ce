package registrations

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
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
		{"the hub's own group", Entry{Name: "Hub", URL: "http://h/mcp"}, `name: "Hub" is the hub's own group of tools`},
		{"the api tools' group", Entry{Name: "api", URL: "http://h/mcp"}, `name: "api" is the hub's own group of tools`},
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

// TestFileUpsertDeleteAndReopen writes through File, sees each write as a
// snapshot of its source, and reads the file again as a restarted hub does.
func TestFileUpsertDeleteAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.registered.yaml")
	t.Setenv("REG_TEST_TOKEN", "tok-123")
	allowed := config.RegistrationSettings{CredentialRefs: []string{"REG_TEST_TOKEN", "REG_TEST_MISSING"}}
	f, err := OpenFile(path, allowed, zerolog.Nop())
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
	again, err := OpenFile(path, allowed, zerolog.Nop())
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

// TestFileCredentialRefs: a laptop registration may name only the
// environment variables of registrations.credentialRefs. Any other is
// refused before the file is written, with an ErrRefused that starts with
// the field and says nothing of the variable; an entry already in the file
// (written by hand, or before the list changed) that names one is listed
// as a problem and never gets its value.
func TestFileCredentialRefs(t *testing.T) {
	t.Setenv("REG_UP_TOKEN", "up-value")
	t.Setenv("REG_ADMIN_TOKEN", "admin-value")
	path := filepath.Join(t.TempDir(), "hub.registered.yaml")
	const byHand = `- {name: old, url: "http://127.0.0.1:1/mcp", auth: bearer, secretRef: REG_ADMIN_TOKEN}
- {name: kept, url: "http://127.0.0.1:2/mcp", auth: bearer, secretRef: REG_UP_TOKEN}
`
	if err := os.WriteFile(path, []byte(byHand), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, config.RegistrationSettings{CredentialRefs: []string{"REG_UP_TOKEN"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	specs := f.specs()
	if len(specs) != 2 || specs[0].BearerToken != "" || specs[0].Token != nil ||
		specs[0].Problem != `auth bearer: secretRef: "REG_ADMIN_TOKEN" is not in registrations.credentialRefs of the hub's config, the environment variables set aside for registered servers` ||
		specs[1].BearerToken.Reveal() != "up-value" || specs[1].Problem != "" {
		t.Fatalf("specs of the file as found: %+v", specs)
	}

	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		e       Entry
		refused bool
	}{
		{"listed", Entry{Name: "a", URL: "http://127.0.0.1:3/mcp", Auth: "bearer", SecretRef: "REG_UP_TOKEN"}, false},
		{"no secretRef", Entry{Name: "b", URL: "http://127.0.0.1:3/mcp"}, false},
		{"a set variable not listed", Entry{Name: "c", URL: "http://127.0.0.1:3/mcp", Auth: "bearer", SecretRef: "REG_ADMIN_TOKEN"}, true},
		{"an unset variable not listed", Entry{Name: "c", URL: "http://127.0.0.1:3/mcp", Auth: "bearer", SecretRef: "REG_NOT_SET"}, true},
		{"another case", Entry{Name: "c", URL: "http://127.0.0.1:3/mcp", Auth: "bearer", SecretRef: "reg_up_token"}, true},
		{"kept with auth none", Entry{Name: "c", URL: "http://127.0.0.1:3/mcp", Auth: "none", SecretRef: "REG_ADMIN_TOKEN"}, true},
		{"over a registration", Entry{Name: "kept", URL: "http://127.0.0.1:3/mcp", Auth: "bearer", SecretRef: "REG_ADMIN_TOKEN"}, true},
	} {
		before, _ := os.ReadFile(path)
		err := f.Upsert(ctx, tc.e)
		after, _ := os.ReadFile(path)
		switch {
		case !tc.refused && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.refused && (!errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), `secretRef: "`+tc.e.SecretRef+`" is not in registrations.credentialRefs`)):
			t.Errorf("%s: %v, want ErrRefused naming secretRef", tc.name, err)
		case tc.refused && string(before) != string(after):
			t.Errorf("%s: refused, yet the file changed:\n%s", tc.name, after)
		}
		if err != nil && strings.Contains(err.Error(), "value") {
			t.Errorf("%s: a value in the error: %v", tc.name, err)
		}
	}
	if has, _ := f.Has(ctx, "c"); has {
		t.Error("a refused entry was kept")
	}
}

// TestFileUnkeptAndReadOnly: Unkept names each entry this config does not
// serve and why; a read-only File refuses writes with ErrReadOnly and the
// reason, and leaves the file as it was.
func TestFileUnkeptAndReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registered.yaml")
	body := `- {name: fine, url: "http://127.0.0.1:1/mcp"}
- {name: declared, url: "http://127.0.0.1:2/mcp"}
- {name: token, url: "http://127.0.0.1:3/mcp", auth: bearer, secretRef: NOT_LISTED}
- {name: listed, url: "http://127.0.0.1:4/mcp", auth: bearer, secretRef: LISTED}
- {name: badurl, url: "/mcp"}
- {name: img, image: "ghcr.io/a/b:1"}
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, config.RegistrationSettings{CredentialRefs: []string{"LISTED"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range f.Unkept(func(name string) bool { return name == "declared" }) {
		got[u.Name] = u.Reason
	}
	for name, want := range map[string]string{"declared": "the config declares", "token": "NOT_LISTED", "badurl": "url: ", "img": "cluster"} {
		if !strings.Contains(got[name], want) {
			t.Errorf("%s: reason %q, want it to hold %q", name, got[name], want)
		}
	}
	if len(got) != 4 {
		t.Errorf("unkept: %v", got)
	}

	f.SetReadOnly("state directory /s is in use by another hub (pid 7)")
	ctx := context.Background()
	for what, err := range map[string]error{
		"upsert": f.Upsert(ctx, Entry{Name: "new", URL: "http://127.0.0.1:5/mcp"}),
		"delete": f.Delete(ctx, "fine"),
	} {
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "pid 7") {
			t.Errorf("%s on a read-only file: %v", what, err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != body {
		t.Errorf("the file changed:\n%s", b)
	}
}

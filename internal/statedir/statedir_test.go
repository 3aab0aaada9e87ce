package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	nameOf := func(p string) string {
		n, err := NameFor(p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name                   string
		flag, env, xdg, config string
		want                   string
	}{
		{"flag wins", "/srv/hub-state", "/env/state", "/xdg", "/etc/hub.yaml", "/srv/hub-state"},
		{"env without flag", "", "/env/state", "/xdg", "/etc/hub.yaml", "/env/state"},
		{"relative flag made absolute", "state", "", "/xdg", "", filepath.Join(cwd, "state")},
		{"embedded default config", "", "", "/xdg", "", "/xdg/mcp-hub/default"},
		{"one per config file", "", "", "/xdg", "/etc/mcp/hub.yaml", "/xdg/mcp-hub/" + nameOf("/etc/mcp/hub.yaml")},
		{"relative XDG_STATE_HOME ignored", "", "", "xdg", "", "/home/u/.local/state/mcp-hub/default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvVar, tc.env)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			t.Setenv("HOME", "/home/u")
			got, err := Resolve(tc.flag, tc.config)
			if err != nil || got != tc.want {
				t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tc.flag, tc.config, got, err, tc.want)
			}
		})
	}
}

func TestNameFor(t *testing.T) {
	a, _ := NameFor("/a/hub.yaml")
	b, _ := NameFor("/b/hub.yaml")
	if a == b || !strings.HasPrefix(a, "hub-") || len(a) != len("hub-")+12 {
		t.Errorf("two hub.yaml in two directories: %q, %q", a, b)
	}
	if again, _ := NameFor("/a/../a/hub.yaml"); again != a {
		t.Errorf("the same file by another path: %q, want %q", again, a)
	}
	if odd, _ := NameFor("/x/my hub.conf.yml"); !strings.HasPrefix(odd, "my_hub_conf-") {
		t.Errorf("odd characters: %q", odd)
	}
	// A symbolic link to a config file is that file.
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if l, r := must(NameFor(link)), must(NameFor(real)); l != r {
		t.Errorf("link %q, file %q", l, r)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// TestOpenLocks: the first Open holds the directory and writes its pid;
// a second one, while it is held, is ReadOnly and names that pid; after
// Close the directory can be held again.
func TestOpenLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if first.ReadOnly {
		t.Fatal("the first hub is read-only")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v %v", fi, err)
	}
	second, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !second.ReadOnly || second.Holder != os.Getpid() {
		t.Fatalf("second: read-only %v, holder %d, want %d", second.ReadOnly, second.Holder, os.Getpid())
	}
	if msg := second.HeldBy(); !strings.Contains(msg, path) || !strings.Contains(msg, "pid ") {
		t.Errorf("HeldBy: %s", msg)
	}
	if prev, err := second.Bind("/x/other.yaml"); err != nil || prev != "" {
		t.Errorf("a read-only Bind: %q %v", prev, err)
	}
	if _, err := os.Stat(filepath.Join(path, ConfigFile)); err == nil {
		t.Error("a read-only Bind wrote")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if third.ReadOnly {
		t.Error("still held after Close")
	}
}

func TestBind(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfgA, cfgB := filepath.Join(t.TempDir(), "a.yaml"), filepath.Join(t.TempDir(), "b.yaml")
	for i, step := range []struct {
		config, wantPrev string
	}{
		{cfgA, ""},
		{cfgA, ""},
		{cfgB, cfgA},
		{"", cfgB},
		{"", ""},
	} {
		if prev, err := d.Bind(step.config); err != nil || prev != step.wantPrev {
			t.Errorf("step %d: Bind(%q) = %q, %v; want %q", i, step.config, prev, err, step.wantPrev)
		}
	}
}

// TestMigrate copies the old files that exist, never over the
// directory's own, once, and leaves the old files where they are.
func TestMigrate(t *testing.T) {
	old := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	legacy := Legacy{Pins: filepath.Join(old, "pins.json"), Names: filepath.Join(old, "names.json"), Registrations: filepath.Join(old, "hub.registered.yaml")}
	write(legacy.Pins, "old pins")
	write(legacy.Registrations, "old registrations")
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	write(d.Registrations(), "own registrations")

	copied, err := d.Migrate(legacy)
	if err != nil || len(copied) != 1 || copied[0] != (Copied{legacy.Pins, d.Pins()}) {
		t.Fatalf("Migrate: %v %v", copied, err)
	}
	for p, want := range map[string]string{d.Pins(): "old pins", d.Registrations(): "own registrations", legacy.Pins: "old pins"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s: %q, want %q", p, b, want)
		}
	}
	if _, err := os.Stat(d.Names()); err == nil {
		t.Error("names copied from nowhere")
	}
	write(legacy.Names, "later names")
	if copied, err := d.Migrate(legacy); err != nil || len(copied) != 0 {
		t.Errorf("second Migrate: %v %v", copied, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Path, MigratedFile)); !strings.Contains(string(b), legacy.Pins+" -> "+d.Pins()) {
		t.Errorf("migration record:\n%s", b)
	}
}

func TestLegacyPaths(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg")
	for _, tc := range []struct {
		config string
		want   Legacy
	}{
		{"", Legacy{"/xdg/mcp-hub/pins.json", "/xdg/mcp-hub/names.json", "/xdg/mcp-hub/registered.yaml"}},
		{"/etc/hub/hub.yaml", Legacy{"/xdg/mcp-hub/pins.json", "/xdg/mcp-hub/names.json", "/etc/hub/hub.registered.yaml"}},
	} {
		if got, err := LegacyPaths(tc.config); err != nil || got != tc.want {
			t.Errorf("LegacyPaths(%q) = %+v, %v; want %+v", tc.config, got, err, tc.want)
		}
	}
}

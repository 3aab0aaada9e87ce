package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func set(kv map[string][]byte) func(map[string][]byte) error {
	return func(records map[string][]byte) error {
		maps.Copy(records, kv)
		return nil
	}
}

func mustLoad(t *testing.T, s Store) map[string][]byte {
	t.Helper()
	records, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return records
}

func TestFileMissingIsEmpty(t *testing.T) {
	for _, path := range []string{"grants.sealed", "no/such/dir/grants.sealed"} {
		s := File(filepath.Join(t.TempDir(), path))
		if records := mustLoad(t, s); records == nil || len(records) != 0 {
			t.Errorf("%s: Load = %v, want an empty map", path, records)
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "grants.sealed")
	s := File(path)
	if got := s.Where(); got != "file "+path {
		t.Errorf("Where = %q", got)
	}
	want := map[string][]byte{"alice.github": {0, 1, 2, 255}, "bob.linear-app": []byte("opaque"), "empty": {}}
	if err := s.Update(ctx, set(want)); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s); !equalRecords(got, want) {
		t.Errorf("Load = %q, want %q", got, want)
	}
	// A new value on the same path reads the same.
	if got := mustLoad(t, File(path)); !equalRecords(got, want) {
		t.Errorf("Load of a new File = %q, want %q", got, want)
	}

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	var content struct {
		Version int               `json:"version"`
		Records map[string]string `json:"records"`
	}
	if err := json.Unmarshal(data, &content); err != nil || content.Version != 1 || content.Records["bob.linear-app"] != "b3BhcXVl" {
		t.Errorf("content %s: want {\"version\":1,\"records\":{key: base64}} (%v)", data, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the store (no temporary file left)", len(entries))
	}

	// Delete one, change one.
	if err := s.Update(ctx, func(records map[string][]byte) error {
		delete(records, "alice.github")
		records["bob.linear-app"] = []byte("new")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want = map[string][]byte{"bob.linear-app": []byte("new"), "empty": {}}
	if got := mustLoad(t, s); !equalRecords(got, want) {
		t.Errorf("after delete: Load = %q, want %q", got, want)
	}

	// Load hands out copies.
	got := mustLoad(t, s)
	got["bob.linear-app"][0] = 'X'
	got["intruder"] = nil
	if again := mustLoad(t, s); !equalRecords(again, want) {
		t.Errorf("changing Load's map changed the store: %q", again)
	}
}

// fileState is what tells a rewrite apart: the file's identity (a rename
// makes a new one), modification time and content.
type fileState struct {
	info os.FileInfo
	data []byte
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{info, data}
}

func (a fileState) same(b fileState) bool {
	return os.SameFile(a.info, b.info) && a.info.ModTime().Equal(b.info.ModTime()) && bytes.Equal(a.data, b.data)
}

func TestFileWritesNothing(t *testing.T) {
	errBoom := errors.New("the grant server said no")
	errFresh := fmt.Errorf("grant already fresh: %w", ErrUnchanged)
	for _, tc := range []struct {
		name    string
		change  func(map[string][]byte) error
		wantErr error
	}{
		{"ErrUnchanged after changing the map", func(r map[string][]byte) error {
			r["a"] = []byte("changed")
			r["new"] = []byte("x")
			return ErrUnchanged
		}, ErrUnchanged},
		{"ErrUnchanged wrapped", func(r map[string][]byte) error {
			delete(r, "a")
			return errFresh
		}, errFresh},
		{"nil without a change", func(r map[string][]byte) error { return nil }, nil},
		{"nil after setting the same value", func(r map[string][]byte) error {
			r["a"] = []byte("1")
			return nil
		}, nil},
		{"change error", func(r map[string][]byte) error {
			r["a"] = []byte("half done")
			return errBoom
		}, errBoom},
		{"invalid key", set(map[string][]byte{"alice/github": nil}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "grants.sealed")
			s := File(path)
			if err := s.Update(context.Background(), set(map[string][]byte{"a": []byte("1")})); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, path)
			time.Sleep(20 * time.Millisecond) // a rewrite would get a later mtime
			err := s.Update(context.Background(), tc.change)
			switch {
			case tc.name == "invalid key":
				if err == nil || !strings.Contains(err.Error(), `invalid record key "alice/github"`) {
					t.Errorf("Update = %v, want the invalid key refused", err)
				}
			case tc.wantErr != nil:
				if err != tc.wantErr { // change's error itself, not wrapped
					t.Errorf("Update = %v, want change's error unwrapped", err)
				}
			case err != nil:
				t.Errorf("Update = %v, want nil", err)
			}
			if after := stateOf(t, path); !before.same(after) {
				t.Errorf("the file was written: %s -> %s", before.data, after.data)
			}
		})
	}

	// On a missing file, an aborted Update creates nothing.
	path := filepath.Join(t.TempDir(), "grants.sealed")
	if err := File(path).Update(context.Background(), func(r map[string][]byte) error { return errBoom }); !errors.Is(err, errBoom) {
		t.Errorf("Update = %v, want errBoom", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an aborted Update created the file: %v", err)
	}
}

func TestFileKeys(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"alice.github", true},
		{"-_.A9", true},
		{".hidden", true},
		{strings.Repeat("k", 253), true},
		{"", false},
		{strings.Repeat("k", 254), false},
		{"alice/github", false},
		{"alice github", false},
		{"alice:github", false},
		{"grünewald", false},
		{".", false},
		{"..", false},
		{"..x", false},
	} {
		t.Run(fmt.Sprintf("%.20q", tc.key), func(t *testing.T) {
			s := File(filepath.Join(t.TempDir(), "grants.sealed"))
			err := s.Update(context.Background(), set(map[string][]byte{tc.key: []byte("v")}))
			if tc.ok != (err == nil) {
				t.Fatalf("Update with key %q = %v, want ok=%v", tc.key, err, tc.ok)
			}
			if n := len(mustLoad(t, s)); n != map[bool]int{true: 1, false: 0}[tc.ok] {
				t.Errorf("%d records stored", n)
			}
		})
	}
}

func TestFileConcurrentUpdates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grants.sealed")
	s := File(path)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.Update(context.Background(), func(r map[string][]byte) error {
				key := fmt.Sprintf("user-%02d", i)
				r[key] = []byte(key)
				count, _ := strconv.Atoi(string(r["count"])) // none yet: 0
				r["count"] = strconv.AppendInt(nil, int64(count+1), 10)
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	records := mustLoad(t, s)
	if len(records) != n+1 || string(records["count"]) != fmt.Sprint(n) {
		t.Errorf("%d records, count %s; want %d keys and count %d", len(records)-1, records["count"], n, n)
	}
}

func TestFileRefusesWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"not JSON", "hello", "not the hub's sealed records"},
		{"another version", `{"version":2,"records":{}}`, "format version 2"},
		{"other fields", `{"version":1,"records":{},"pins":{}}`, "not the hub's sealed records"},
		{"values not base64", `{"version":1,"records":{"a":"!!"}}`, "not the hub's sealed records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "grants.sealed")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s := File(path)
			if _, err := s.Load(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load = %v, want an error naming the file and saying %q", err, tc.want)
			}
			called := false
			err := s.Update(context.Background(), func(r map[string][]byte) error { called = true; return nil })
			if err == nil || called {
				t.Errorf("Update = %v (change called: %v), want an error before change", err, called)
			}
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Errorf("the unreadable file was overwritten: %s", data)
			}
		})
	}
}

func TestFileUpdateWaitsWithContext(t *testing.T) {
	s := File(filepath.Join(t.TempDir(), "grants.sealed"))
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Update(context.Background(), func(r map[string][]byte) error {
			close(inside)
			<-release
			return ErrUnchanged
		})
	}()
	<-inside
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Update(ctx, set(map[string][]byte{"a": nil}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Update while another holds the file = %v, want the context's deadline", err)
	}
	close(release)
	if err := <-done; !errors.Is(err, ErrUnchanged) {
		t.Error(err)
	}
}

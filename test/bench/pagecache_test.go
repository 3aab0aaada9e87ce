package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestColdAndWarmCopies: a cold copy leaves (almost) none of the file in
// the page cache, a warm one all of it.
func TestColdAndWarmCopies(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages are the file: nothing to drop")
	}
	src := filepath.Join(dir, "src")
	data := make([]byte, 8<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(src, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	cold, err := coldCopy(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if cold > 0.05 {
		t.Errorf("%.0f%% of a cold copy cached, want ~0", 100*cold)
	}
	if got, err := os.ReadFile(dst); err != nil || len(got) != len(data) || string(got[:64]) != string(data[:64]) {
		t.Fatalf("copy differs: %d bytes, %v", len(got), err)
	}
	warm, err := warmCopy(src, filepath.Join(dir, "warm"))
	if err != nil {
		t.Fatal(err)
	}
	if warm < 0.99 {
		t.Errorf("%.0f%% of a warm copy cached, want 100%%", 100*warm)
	}
}

//go:build unix

package credential

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSpecialFilesFailFast: a token file that is a device or a FIFO is
// refused before reading. /dev/zero never ends (read whole, it exhausts
// memory) and opening a FIFO blocks until a writer comes.
func TestSpecialFilesFailFast(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", "/dev/urandom", fifo} {
		_, err := resolveWithin(t, Ref{File: path}, nil)
		if want := "file " + path + ": is not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%s) error = %v, want %q", path, err, want)
		}
	}
}

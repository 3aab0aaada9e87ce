package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFileUpToDate runs the generator into a temporary directory
// and compares its output with the committed meta_gen.go, so an
// upgrade of the library whose metadata changes fails here until
// `go generate ./internal/guardrails/detect/phone` is run.
func TestGeneratedFileUpToDate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "meta_gen.go")
	if err := run(out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "meta_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("internal/guardrails/detect/phone/meta_gen.go is not what the generator writes from this library version (%d bytes, generated %d): run go generate ./internal/guardrails/detect/phone", len(want), len(got))
	}
}

package credential

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secretValue = "s3cr3t-value-42"

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", "\n  "+secretValue+"\n")
	exact := file("exact", strings.Repeat("a", MaxBytes))
	tooBig := file("big", strings.Repeat("a", MaxBytes+1))
	bigWithNewline := file("big-nl", strings.Repeat("a", MaxBytes)+"\n")
	empty := file("empty", "")
	blank := file("blank", " \n\t\n")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	// A sparse file reports a large size but costs no disk.
	sparse := filepath.Join(dir, "sparse")
	if f, err := os.Create(sparse); err != nil {
		t.Fatal(err)
	} else {
		if err := f.Truncate(512 << 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	t.Setenv("CREDENTIAL_TEST_SET", " "+secretValue+"\n")
	t.Setenv("CREDENTIAL_TEST_BLANK", "  ")
	t.Setenv("CREDENTIAL_TEST_BIG", strings.Repeat("b", MaxBytes+1))

	secrets := SecretReader(func(_ context.Context, ns, name string) (map[string][]byte, bool, error) {
		switch ns + "/" + name {
		case "hub/tok":
			return map[string][]byte{"token": []byte(secretValue + "\n"), "blank": []byte("\n"), "big": make([]byte, MaxBytes+1)}, true, nil
		case "hub/broken":
			return nil, false, errors.New("forbidden")
		}
		return nil, false, nil
	})

	cases := []struct {
		name    string
		ref     Ref
		want    string // the value, when no error
		wantErr string
	}{
		{name: "env", ref: Ref{Env: "CREDENTIAL_TEST_SET"}, want: secretValue},
		{name: "env unset", ref: Ref{Env: "CREDENTIAL_TEST_UNSET"}, wantErr: "env: variable CREDENTIAL_TEST_UNSET is not set"},
		{name: "env blank", ref: Ref{Env: "CREDENTIAL_TEST_BLANK"}, wantErr: "env: variable CREDENTIAL_TEST_BLANK: is empty"},
		{name: "env too big", ref: Ref{Env: "CREDENTIAL_TEST_BIG"}, wantErr: "env: variable CREDENTIAL_TEST_BIG: is larger than 64 KiB"},
		{name: "file trimmed", ref: Ref{File: good}, want: secretValue},
		{name: "file through symlink", ref: Ref{File: link}, want: secretValue},
		{name: "file of exactly 64 KiB", ref: Ref{File: exact}, want: strings.Repeat("a", MaxBytes)},
		{name: "file one byte over", ref: Ref{File: tooBig}, wantErr: "file " + tooBig + ": is larger than 64 KiB"},
		{name: "size counts before trimming", ref: Ref{File: bigWithNewline}, wantErr: "is larger than 64 KiB"},
		{name: "sparse 512 MiB file", ref: Ref{File: sparse}, wantErr: "file " + sparse + ": is larger than 64 KiB"},
		{name: "file empty", ref: Ref{File: empty}, wantErr: "file " + empty + ": is empty"},
		{name: "file blank", ref: Ref{File: blank}, wantErr: "file " + blank + ": is empty"},
		{name: "file missing", ref: Ref{File: filepath.Join(dir, "nope")}, wantErr: filepath.Join(dir, "nope")},
		{name: "directory", ref: Ref{File: dir}, wantErr: "file " + dir + ": is not a regular file"},
		{name: "secret", ref: Ref{Secret: &SecretKey{Namespace: "hub", Name: "tok", Key: "token"}}, want: secretValue},
		{name: "secret missing", ref: Ref{Secret: &SecretKey{Namespace: "hub", Name: "nope", Key: "token"}}, wantErr: "Secret hub/nope not found"},
		{name: "secret key missing", ref: Ref{Secret: &SecretKey{Namespace: "hub", Name: "tok", Key: "other"}}, wantErr: `Secret hub/tok has no key "other"`},
		{name: "secret key blank", ref: Ref{Secret: &SecretKey{Namespace: "hub", Name: "tok", Key: "blank"}}, wantErr: `Secret hub/tok key "blank": is empty`},
		{name: "secret key too big", ref: Ref{Secret: &SecretKey{Namespace: "hub", Name: "tok", Key: "big"}}, wantErr: `Secret hub/tok key "big": is larger than 64 KiB`},
		{name: "secret read fails", ref: Ref{Secret: &SecretKey{Namespace: "hub", Name: "broken", Key: "token"}}, wantErr: "read Secret hub/broken: forbidden"},
		{name: "no source", ref: Ref{}, wantErr: "set exactly one of env, file, secretRef"},
		{name: "two sources", ref: Ref{Env: "CREDENTIAL_TEST_SET", File: good}, wantErr: "set exactly one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveWithin(t, tc.ref, secrets)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Resolve = %.40q, %v; want %.40q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Resolve error = %v, want it to contain %q", err, tc.wantErr)
			}
			if got != "" {
				t.Fatalf("Resolve returned a value with its error")
			}
			if strings.Contains(err.Error(), secretValue) || strings.Contains(err.Error(), "aaaa") || strings.Contains(err.Error(), "bbbb") {
				t.Fatalf("error %q holds the value", err)
			}
		})
	}
}

func TestResolveSecretWithoutReader(t *testing.T) {
	_, err := Resolve(context.Background(), Ref{Secret: &SecretKey{Namespace: "hub", Name: "tok", Key: "token"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "Secret hub/tok: no Kubernetes cluster") {
		t.Fatalf("error = %v", err)
	}
}

// resolveWithin fails the test instead of hanging when Resolve does not
// return: a reader that follows /dev/zero or waits on a FIFO never would.
func resolveWithin(t *testing.T, ref Ref, secrets SecretReader) (string, error) {
	t.Helper()
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := Resolve(context.Background(), ref, secrets)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Resolve(%+v) did not return within 5s", ref)
		return "", nil
	}
}

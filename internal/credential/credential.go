// Package credential reads the hub's secrets (bearer tokens for upstreams,
// callers' tokens, api tool credentials) from an environment variable, a
// file or a Kubernetes Secret. It is the one place that decides what a
// usable credential is, so every source trims, rejects empty values and
// bounds the size the same way; before it existed, two readers disagreed on
// empty files and a token file pointing at /dev/zero made the hub read
// until it died.
//
// Errors name the variable, the file or the Secret, never the value.
package credential

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxBytes is the largest credential accepted, before trimming. Real
// tokens are a few KiB at most; anything larger is a misconfiguration (a
// file of the wrong kind), and reading it whole could exhaust memory.
const MaxBytes = 64 << 10

// Ref says where one credential is read from: set exactly one of Env,
// File and Secret.
type Ref struct {
	// Env is the name of an environment variable.
	Env string
	// File is the path of a regular file (a mounted Secret, say).
	File string
	// Secret is one key of a Kubernetes Secret.
	Secret *SecretKey
}

// SecretKey names one key of a Kubernetes Secret.
type SecretKey struct {
	Namespace string
	Name      string
	Key       string
}

// SecretReader returns the data of the Secret namespace/name. found is
// false when there is no such Secret; err is for failures to find out. It
// lets this package read Secrets without a Kubernetes client: the caller
// passes an API lookup or an informer cache.
type SecretReader func(ctx context.Context, namespace, name string) (data map[string][]byte, found bool, err error)

// Resolve reads the credential ref points at: trimmed of surrounding
// whitespace, and an error when it is missing, empty or larger than
// MaxBytes. secrets may be nil when ref names no Secret.
func Resolve(ctx context.Context, ref Ref, secrets SecretReader) (string, error) {
	set := 0
	for _, isSet := range []bool{ref.Env != "", ref.File != "", ref.Secret != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return "", errors.New("set exactly one of env, file, secretRef")
	}
	switch {
	case ref.Env != "":
		v, ok := os.LookupEnv(ref.Env)
		if !ok {
			return "", fmt.Errorf("env: variable %s is not set", ref.Env)
		}
		return accept("env: variable "+ref.Env, []byte(v))
	case ref.File != "":
		return readFile(ref.File)
	default:
		return readSecret(ctx, *ref.Secret, secrets)
	}
}

// readFile reads at most MaxBytes+1 bytes of a regular file. A device, a
// pipe or a directory is refused before it is read, since /dev/zero or a
// FIFO would never end (or never start).
func readFile(path string) (string, error) {
	where := "file " + path
	// Stat before open: opening a FIFO blocks until a writer comes.
	if fi, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: is not a regular file (%s)", where, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("file: %w", err)
	}
	defer f.Close()
	// The path may have been replaced between Stat and Open.
	if fi, err := f.Stat(); err != nil {
		return "", fmt.Errorf("file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: is not a regular file (%s)", where, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return "", fmt.Errorf("file: read %s: %w", path, err)
	}
	return accept(where, b)
}

func readSecret(ctx context.Context, k SecretKey, secrets SecretReader) (string, error) {
	where := fmt.Sprintf("Secret %s/%s", k.Namespace, k.Name)
	if k.Name == "" || k.Key == "" {
		return "", fmt.Errorf("%s: name and key are required", where)
	}
	if secrets == nil {
		return "", fmt.Errorf("%s: no Kubernetes cluster to read it from", where)
	}
	data, found, err := secrets(ctx, k.Namespace, k.Name)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", where, err)
	}
	if !found {
		return "", fmt.Errorf("%s not found", where)
	}
	v, has := data[k.Key]
	if !has {
		return "", fmt.Errorf("%s has no key %q", where, k.Key)
	}
	return accept(fmt.Sprintf("%s key %q", where, k.Key), v)
}

// accept is the single rule for every source: at most MaxBytes, surrounding
// whitespace (a mounted file's trailing newline) trimmed, not empty. where
// names the source in the error; the value never appears in it.
func accept(where string, raw []byte) (string, error) {
	if len(raw) > MaxBytes {
		return "", fmt.Errorf("%s: is larger than %d KiB", where, MaxBytes>>10)
	}
	v := strings.TrimSpace(string(raw))
	if v == "" {
		return "", fmt.Errorf("%s: is empty", where)
	}
	return v, nil
}

package registrations

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
)

// SourceName is the discovery source of a laptop hub's registrations.
const SourceName = "registered"

// File keeps the registrations of a hub without a cluster in one YAML
// file (a list in the shape of the mcp-servers ConfigMap's servers key)
// and is the discovery source that reports them: a write is sent to the
// registry at once, and the file is read again at start-up.
type File struct {
	path string
	log  zerolog.Logger
	// allowed are the environment variables a secretRef may name.
	allowed config.RegistrationSettings

	mu      sync.Mutex
	entries []Entry
	// readOnly, when set, is why nothing may be written (SetReadOnly).
	readOnly string
	// changed wakes Run after a write; buffered one, a pending wake-up
	// covers every write before it.
	changed chan struct{}
}

// OpenFile reads the registrations at path (a missing file is none).
// allowed lists the environment variables a registration's secretRef may
// name (registrations.credentialRefs); the file is checked against it
// again whenever it is read, so an entry written by hand, or before the
// list changed, gets no other credential either.
func OpenFile(path string, allowed config.RegistrationSettings, log zerolog.Logger) (*File, error) {
	f := &File{path: path, allowed: allowed, log: log.With().Str("source", SourceName).Str("file", path).Logger(), changed: make(chan struct{}, 1)}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("read registrations %s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(b, &f.entries); err != nil {
		return nil, fmt.Errorf("read registrations %s: %w", path, err)
	}
	return f, nil
}

// SetReadOnly makes Upsert and Delete fail with ErrReadOnly and why: the
// file is another hub's (its state directory is held by that hub). The
// registrations in it are still served.
func (f *File) SetReadOnly(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readOnly = why
}

// Unkept is a registration the hub cannot serve as its config stands,
// and why.
type Unkept struct {
	Name, Reason string
}

// Unkept lists the registrations in the file that are not served with
// this config, each with the reason: a name the config (declared)
// already gives a server (that one wins), a URL or name the rules refuse,
// a secretRef not in registrations.credentialRefs. They stay in the file,
// and are served again once the config allows them.
func (f *File) Unkept(declared func(name string) bool) []Unkept {
	f.mu.Lock()
	entries := slices.Clone(f.entries)
	f.mu.Unlock()
	var out []Unkept
	for _, e := range entries {
		switch err := e.Validate(); {
		case declared(e.Name):
			out = append(out, Unkept{e.Name, "the config declares a server of this name; the config's is served"})
		case err != nil:
			out = append(out, Unkept{e.Name, err.Error()})
		case e.IsImage():
			out = append(out, Unkept{e.Name, "image entries need a cluster to run in"})
		case strings.EqualFold(e.Auth, "bearer"):
			if err := f.checkSecretRef(e.SecretRef); err != nil {
				out = append(out, Unkept{e.Name, "auth bearer: " + err.Error()})
			}
		}
	}
	return out
}

// Where implements Writer.
func (f *File) Where() string { return f.path }

// Upsert implements Writer. Image entries need a cluster to run in.
func (f *File) Upsert(_ context.Context, e Entry) error {
	if e.IsImage() {
		return fmt.Errorf("image: %w; without a cluster register a running server by url", ErrNeedsCluster)
	}
	if e.SecretRef != "" {
		if err := f.checkSecretRef(e.SecretRef); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readOnly != "" {
		return fmt.Errorf("register %s: %w: %s", e.Name, ErrReadOnly, f.readOnly)
	}
	next := slices.Clone(f.entries)
	i := slices.IndexFunc(next, func(x Entry) bool { return x.Name == e.Name })
	if i >= 0 {
		next[i] = e
	} else {
		next = append(next, e)
	}
	return f.save(next)
}

// Delete implements Writer.
func (f *File) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readOnly != "" {
		return fmt.Errorf("remove %s: %w: %s", name, ErrReadOnly, f.readOnly)
	}
	i := slices.IndexFunc(f.entries, func(x Entry) bool { return x.Name == name })
	if i < 0 {
		return ErrNotFound
	}
	return f.save(slices.Delete(slices.Clone(f.entries), i, i+1))
}

// Owns implements Writer.
func (f *File) Owns(source string, _ *config.Origin) bool { return source == SourceName }

// Has reports whether a registration of that name exists.
func (f *File) Has(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.entries, func(x Entry) bool { return x.Name == name }), nil
}

// save writes entries atomically (temp file, rename) and wakes Run.
func (f *File) save(entries []Entry) error {
	if entries == nil {
		entries = []Entry{}
	}
	b, err := yaml.Marshal(entries)
	if err != nil {
		return fmt.Errorf("write registrations: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("write registrations: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".registered-*.yaml")
	if err != nil {
		return fmt.Errorf("write registrations: %w", err)
	}
	defer os.Remove(tmp.Name())
	header := "# Servers registered through mcp-hub's API (POST /api/mcp/server); managed by the hub.\n"
	if _, err := tmp.WriteString(header + string(b)); err != nil {
		tmp.Close()
		return fmt.Errorf("write registrations %s: %w", f.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write registrations %s: %w", f.path, err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write registrations %s: %w", f.path, err)
	}
	f.entries = entries
	select {
	case f.changed <- struct{}{}:
	default:
	}
	return nil
}

// Name implements discovery.Source.
func (f *File) Name() string { return SourceName }

// Run implements discovery.Source: the registrations now, and again after
// every write.
func (f *File) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	for {
		select {
		case out <- discovery.Snapshot{Source: SourceName, Servers: f.specs()}:
		case <-ctx.Done():
			return
		}
		select {
		case <-f.changed:
		case <-ctx.Done():
			return
		}
	}
}

// checkSecretRef refuses an environment variable the operator did not list
// in registrations.credentialRefs. The refusal does not say whether the
// variable exists or what it holds.
func (f *File) checkSecretRef(ref string) error {
	if f.allowed.Allows(ref) {
		return nil
	}
	return refuse("%q is not in registrations.credentialRefs of the hub's config, the environment variables set aside for registered servers", ref)
}

// specs turns the entries into server specs. A bearer entry's secretRef
// names an environment variable of the hub (token.env) listed in
// registrations.credentialRefs; one not listed, or not set, is the
// server's problem, listed as its error (it is not dialled), not a failure
// of the others.
func (f *File) specs() []config.ServerSpec {
	f.mu.Lock()
	entries := slices.Clone(f.entries)
	f.mu.Unlock()
	out := []config.ServerSpec{}
	for _, e := range entries {
		spec := config.ServerSpec{Name: e.Name, URL: e.URL, Source: SourceName}
		if err := spec.Normalize(); err != nil {
			f.log.Error().Err(err).Str("server", e.Name).Msg("registered server skipped")
			continue
		}
		if strings.EqualFold(e.Auth, "bearer") {
			if err := f.checkSecretRef(e.SecretRef); err != nil {
				spec.Problem = "auth bearer: " + err.Error()
				out = append(out, spec)
				continue
			}
			spec.Token = &config.TokenRef{Env: e.SecretRef}
			if err := spec.ResolveToken(); err != nil {
				spec.Problem = fmt.Sprintf("auth bearer: secretRef %s: %v", e.SecretRef, err)
			}
		}
		out = append(out, spec)
	}
	return out
}

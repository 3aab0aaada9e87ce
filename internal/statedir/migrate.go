package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Legacy are the places hubs kept their state before state directories:
// the pins and name claims of every hub on the machine in Base itself,
// and the registrations beside the config file (hub.yaml ->
// hub.registered.yaml), or in Base for the embedded default config. A
// field left "" is not migrated.
type Legacy struct {
	Pins, Names, Registrations string
}

// LegacyPaths are the old locations of the state of a hub started with
// configPath ("" for the embedded default config).
func LegacyPaths(configPath string) (Legacy, error) {
	base, err := Base()
	if err != nil {
		return Legacy{}, err
	}
	l := Legacy{Pins: filepath.Join(base, PinsFile), Names: filepath.Join(base, NamesFile), Registrations: filepath.Join(base, RegistrationsFile)}
	if configPath != "" {
		abs, err := filepath.Abs(configPath)
		if err != nil {
			return Legacy{}, fmt.Errorf("old registrations file of config %s: %w", configPath, err)
		}
		l.Registrations = strings.TrimSuffix(abs, filepath.Ext(abs)) + ".registered.yaml"
	}
	return l, nil
}

// Copied is one file Migrate copied into the directory.
type Copied struct {
	From, To string
}

// Migrate copies the state found at the old locations into the directory,
// once: the first time a hub opens the directory (a file the directory
// already has is never overwritten). The old files are left where they
// are, since other hubs (other configs) may still copy the shared pins
// from them; they are no longer read. When a copy fails nothing is
// recorded, so the next start tries again. A ReadOnly directory is left
// alone.
func (d *Dir) Migrate(from Legacy) ([]Copied, error) {
	if d.ReadOnly {
		return nil, nil
	}
	marker := filepath.Join(d.Path, MigratedFile)
	if _, err := os.Stat(marker); err == nil {
		return nil, nil
	}
	var done []Copied
	var errs []error
	for _, p := range []Copied{{from.Pins, d.Pins()}, {from.Names, d.Names()}, {from.Registrations, d.Registrations()}} {
		if p.From == "" {
			continue
		}
		if _, err := os.Stat(p.To); err == nil {
			continue
		}
		copied, err := copyFile(p.From, p.To)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if copied {
			done = append(done, p)
		}
	}
	if len(errs) > 0 {
		return done, errors.Join(errs...)
	}
	var note strings.Builder
	note.WriteString("# State copied from where hubs kept it before state directories (once; the old files are no longer read).\n")
	for _, c := range done {
		fmt.Fprintf(&note, "%s -> %s\n", c.From, c.To)
	}
	if err := os.WriteFile(marker, []byte(note.String()), 0o600); err != nil {
		return done, fmt.Errorf("record the migration in %s: %w", marker, err)
	}
	return done, nil
}

// copyFile copies from to to (0600, through a temporary file and a
// rename) and reports whether there was anything to copy.
func copyFile(from, to string) (bool, error) {
	b, err := os.ReadFile(from)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("migrate %s: %w", from, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+"-*")
	if err != nil {
		return false, fmt.Errorf("migrate %s to %s: %w", from, to, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), to)
	}
	if err != nil {
		return false, fmt.Errorf("migrate %s to %s: %w", from, to, err)
	}
	return true, nil
}

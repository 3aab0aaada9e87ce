// Package statedir is where a hub without a cluster keeps what a restart
// must remember: the pins of tool definitions, the claims that keep
// published tool names stable, and the servers registered through the
// API. Each config file has a directory of its own, so hubs started with
// different configs never read, rewrite or forget each other's state, and
// a lock file in it keeps a second hub on the same directory from writing
// there (it runs read-only). In a cluster none of this is used: the state
// is in ConfigMaps shared by the replicas.
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// EnvVar names the state directory when no --state-dir is given.
const EnvVar = "MCP_HUB_STATE_DIR"

// The files of a state directory.
const (
	PinsFile          = "pins.json"
	NamesFile         = "names.json"
	RegistrationsFile = "registered.yaml"
	// LockFile is held (flock) by the hub that writes the directory and
	// holds its pid.
	LockFile = "hub.lock"
	// ConfigFile records the config file the directory was last used
	// with, so a hub started on it with another config says so.
	ConfigFile = "config-path"
	// MigratedFile records what was copied in from the locations of
	// hubs before state directories, so it is copied once.
	MigratedFile = "migrated"
)

// DefaultName is the directory of the hub that runs the embedded default
// config (no --config).
const DefaultName = "default"

// Base is the directory that holds every hub's state directory:
// $XDG_STATE_HOME/mcp-hub, else ~/.local/state/mcp-hub.
func Base() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "mcp-hub"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state directory (set --state-dir or %s): %w", EnvVar, err)
	}
	return filepath.Join(home, ".local", "state", "mcp-hub"), nil
}

// Resolve is the state directory of a hub: explicit (--state-dir) when
// set, else $MCP_HUB_STATE_DIR, else one per config file under Base,
// named after the file and a short hash of its absolute path
// (hub-1a2b3c4d5e6f for /home/me/hub.yaml), or Base/default for the
// embedded default config (configPath "").
func Resolve(explicit, configPath string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv(EnvVar)
	}
	if explicit != "" {
		dir, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("state directory %s: %w", explicit, err)
		}
		return dir, nil
	}
	base, err := Base()
	if err != nil {
		return "", err
	}
	if configPath == "" {
		return filepath.Join(base, DefaultName), nil
	}
	name, err := NameFor(configPath)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, name), nil
}

// NameFor is the name of the state directory of the config file at
// path: the file's name without its extension, reduced to letters,
// digits, '-' and '_', then '-' and the first 12 hex digits of the
// SHA-256 of its absolute path (symbolic links resolved when the file
// exists), so two files of the same name in different directories get
// different directories.
func NameFor(configPath string) (string, error) {
	abs, err := canonical(configPath)
	if err != nil {
		return "", err
	}
	stem := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
	stem = strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, stem)
	if stem == "" {
		stem = "config"
	}
	sum := sha256.Sum256([]byte(abs))
	return stem + "-" + hex.EncodeToString(sum[:])[:12], nil
}

// canonical is the absolute path of the config file, symbolic links
// resolved when it exists.
func canonical(configPath string) (string, error) {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return "", fmt.Errorf("state directory of config %s: %w", configPath, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// Dir is an open state directory. A hub holds the lock of its directory
// while it runs; a second hub on the same directory gets it ReadOnly: it
// reads the state and keeps what it learns in memory.
type Dir struct {
	// Path is the directory.
	Path string
	// ReadOnly is set when another hub holds the directory: nothing may
	// be written in it.
	ReadOnly bool
	// Holder is the pid of the hub that holds the directory when
	// ReadOnly (0 when it could not be read).
	Holder int
	lock   *os.File
}

// Open creates the directory (0700) when missing and takes its lock. When
// another hub holds it, the Dir is ReadOnly and names that hub's pid;
// Close releases the lock (a hub that dies releases it too).
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", path, err)
	}
	f, err := os.OpenFile(filepath.Join(path, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock of state directory %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state directory %s: %w", path, err)
	}
	if !held {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return &Dir{Path: path, ReadOnly: true, Holder: pid}, nil
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write the lock of state directory %s: %w", path, err)
	}
	return &Dir{Path: path, lock: f}, nil
}

// Close releases the lock; the lock file stays (removing it would race
// with the next hub taking it).
func (d *Dir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	err := d.lock.Close()
	d.lock = nil
	return err
}

// HeldBy says which hub holds a ReadOnly directory, for logs and errors.
func (d *Dir) HeldBy() string {
	if d.Holder == 0 {
		return fmt.Sprintf("state directory %s is in use by another hub", d.Path)
	}
	return fmt.Sprintf("state directory %s is in use by another hub (pid %d)", d.Path, d.Holder)
}

// Pins is the pins file of the directory.
func (d *Dir) Pins() string { return filepath.Join(d.Path, PinsFile) }

// Names is the name claims file of the directory.
func (d *Dir) Names() string { return filepath.Join(d.Path, NamesFile) }

// Registrations is the file of the servers registered through the API.
func (d *Dir) Registrations() string { return filepath.Join(d.Path, RegistrationsFile) }

// Bind records configPath ("" for the embedded default) as the config
// the directory is used with and returns the one it was used with
// before, "" the first time or when it is the same. A hub says so when
// they differ: the registrations in the directory were made for the
// other config.
func (d *Dir) Bind(configPath string) (previous string, err error) {
	now := "(embedded default config)"
	if configPath != "" {
		if now, err = canonical(configPath); err != nil {
			return "", err
		}
	}
	file := filepath.Join(d.Path, ConfigFile)
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		previous = strings.TrimSpace(string(b))
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	if previous == now {
		return "", nil
	}
	if d.ReadOnly {
		return previous, nil
	}
	if err := os.WriteFile(file, []byte(now+"\n"), 0o600); err != nil {
		return previous, fmt.Errorf("write %s: %w", file, err)
	}
	return previous, nil
}

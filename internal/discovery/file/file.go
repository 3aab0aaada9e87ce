// Package file watches the hub's YAML config file and reports its servers.
// Edits apply without a restart; an invalid edit is reported and the last good
// set stays in force, so a typo never drops running upstreams. A file caught
// half-written counts as an invalid edit: one with nothing in it (config.Parse
// refuses it) or one without a servers key while servers run. Removing every
// server takes an explicit "servers: []".
package file

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
)

// SourceName is the name of this source in snapshots and listings.
const SourceName = "file"

// settle is how long the source waits after a file event before reading, so
// an editor's write-rename-chmod burst becomes one reload.
const settle = 50 * time.Millisecond

// Source reports the servers of one config file.
type Source struct {
	path    string
	initial *config.Config
	log     zerolog.Logger
}

// New returns a source for path. initial is the config already loaded at
// start-up (so a broken file fails start-up, not the first reload).
func New(path string, initial *config.Config, log zerolog.Logger) *Source {
	return &Source{path: path, initial: initial, log: log.With().Str("source", SourceName).Str("file", path).Logger()}
}

// Name implements discovery.Source.
func (s *Source) Name() string { return SourceName }

// Run implements discovery.Source.
func (s *Source) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	last := s.initial
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Error().Err(err).Msg("cannot watch config file; edits need a restart")
		if send(ctx, out, last) {
			<-ctx.Done()
		}
		return
	}
	defer w.Close()
	dirs := s.watchDirs(last)
	for d := range dirs {
		if err := w.Add(d); err != nil {
			s.log.Error().Err(err).Str("dir", d).Msg("cannot watch directory; edits there need a restart")
		}
	}
	// An edit between start-up's load and the watch would be missed: read
	// once more now that the watch is in place.
	if cfg, err := s.load(last); err == nil {
		last = cfg
	} else {
		s.log.Error().Err(err).Msg("config edit rejected; the last good config stays in force")
	}
	if !send(ctx, out, last) {
		return
	}
	var timer *time.Timer
	var fire <-chan time.Time
	var rejected string // the reason of the last rejected edit, logged once
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			// Only the files the config is made of: a log file (or
			// anything else) written in the same directory must not
			// trigger a reload, least of all one whose rejection is
			// logged into that very file.
			if ev.Op == fsnotify.Chmod || !s.watched(last, ev.Name) {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(settle)
			} else {
				timer.Reset(settle)
			}
			fire = timer.C
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.log.Warn().Err(err).Msg("config watch error")
		case <-fire:
			fire = nil
			cfg, err := s.load(last)
			if err != nil {
				// One line per new reason, not one per look at the
				// same bad file.
				if msg := err.Error(); msg != rejected {
					rejected = msg
					s.log.Error().Err(err).Msg("config edit rejected; the last good config stays in force")
				}
				continue
			}
			rejected = ""
			if discovery.SameServers(last.Servers, cfg.Servers) && reflect.DeepEqual(last.VirtualServers, cfg.VirtualServers) {
				continue
			}
			last = cfg
			for d := range s.watchDirs(cfg) {
				if !dirs[d] {
					dirs[d] = true
					_ = w.Add(d)
				}
			}
			s.log.Info().Int("servers", len(cfg.Servers)).Msg("config reloaded")
			if !send(ctx, out, cfg) {
				return
			}
		}
	}
}

// load reads the file and decides whether it may replace last. A file
// without a servers key while last has servers is refused: it is what an
// editor or a copy caught mid-write looks like, and taking it for "no
// servers" would drop every upstream. config.Load already refuses a file
// with nothing in it.
func (s *Source) load(last *config.Config) (*config.Config, error) {
	cfg, err := config.Load(s.path)
	if err != nil {
		return nil, err
	}
	if cfg.Servers == nil && len(last.Servers) > 0 {
		return nil, fmt.Errorf("config %s: no servers key while %d servers run; taken for a half-written file (to remove them all, write \"servers: []\")", s.path, len(last.Servers))
	}
	return cfg, nil
}

// watched reports whether an event on name can change cfg: the config
// file, a token or client secret file it names, or the "..data" swap by
// which Kubernetes updates a ConfigMap or Secret volume.
func (s *Source) watched(cfg *config.Config, name string) bool {
	name = filepath.Clean(name)
	if strings.HasPrefix(filepath.Base(name), "..") || name == filepath.Clean(s.path) {
		return true
	}
	for _, srv := range cfg.Servers {
		if srv.Token != nil && srv.Token.File != "" && name == filepath.Clean(srv.Token.File) {
			return true
		}
		if o := srv.ClientCredentials(); o != nil && o.ClientSecret != nil && o.ClientSecret.File != "" && name == filepath.Clean(o.ClientSecret.File) {
			return true
		}
	}
	return false
}

// watchDirs are the directories of the config file and of token files: a
// directory watch survives the rename-replace that editors and Kubernetes
// ConfigMap/Secret volumes do.
func (s *Source) watchDirs(cfg *config.Config) map[string]bool {
	dirs := map[string]bool{filepath.Dir(s.path): true}
	for _, srv := range cfg.Servers {
		if srv.Token != nil && srv.Token.File != "" {
			dirs[filepath.Dir(srv.Token.File)] = true
		}
		if o := srv.ClientCredentials(); o != nil && o.ClientSecret != nil && o.ClientSecret.File != "" {
			dirs[filepath.Dir(o.ClientSecret.File)] = true
		}
	}
	return dirs
}

func send(ctx context.Context, out chan<- discovery.Snapshot, cfg *config.Config) bool {
	select {
	case out <- discovery.Snapshot{Source: SourceName, Servers: cfg.Servers, Virtual: cfg.VirtualServers}:
		return true
	case <-ctx.Done():
		return false
	}
}

package hub

import (
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/statedir"
)

// openState opens the state directory of a hub without a cluster
// (statedir): its pins, stable names and registrations. It is nil in a
// cluster (or with --kubeconfig), where they are kept in ConfigMaps. A
// directory another hub holds is opened read-only, with a warning that
// names it and the other hub's pid. On the first start in a directory the
// state of the old locations is copied in, and said so.
func openState(cfg *config.Config, o Options, log zerolog.Logger) (*statedir.Dir, error) {
	rc, _, err := clusterConfig(o)
	if err != nil {
		return nil, err
	}
	if rc != nil {
		if o.StateDir != "" {
			log.Warn().Str("dir", o.StateDir).Msg("--state-dir is not used with a cluster: pins, names and registrations are kept in ConfigMaps")
		}
		return nil, nil
	}
	path, err := statedir.Resolve(o.StateDir, o.ConfigPath)
	if err != nil {
		return nil, err
	}
	d, err := statedir.Open(path)
	if err != nil {
		return nil, err
	}
	if d.ReadOnly {
		log.Warn().Str("dir", d.Path).Int("pid", d.Holder).
			Msg(d.HeldBy() + ": this hub runs read-only there: pins and names it learns are kept in memory, registrations through the API are refused (give it its own --state-dir to keep them)")
		return d, nil
	}
	if prev, err := d.Bind(o.ConfigPath); err != nil {
		log.Warn().Err(err).Msg("state directory: cannot record its config file")
	} else if prev != "" {
		log.Warn().Str("dir", d.Path).Str("before", prev).Str("config", configName(o.ConfigPath)).
			Msg("state directory was last used with another config file; its pins, names and registrations are kept and checked against this one")
	}
	legacy, err := statedir.LegacyPaths(o.ConfigPath)
	if err != nil {
		log.Warn().Err(err).Msg("state directory: old locations not searched")
		return d, nil
	}
	if cfg.Pinning.StateFile != "" {
		// The pins stay where pinning.stateFile says.
		legacy.Pins, legacy.Names = "", ""
	}
	copied, err := d.Migrate(legacy)
	for _, c := range copied {
		log.Warn().Str("from", c.From).Str("to", c.To).
			Msg("state copied from where older hubs kept it; the old file is no longer read (remove it once every hub has started once)")
	}
	if err != nil {
		log.Error().Err(err).Str("dir", d.Path).Msg("state directory: state of older hubs not copied; tried again at the next start")
	}
	return d, nil
}

// configName names the config for the log: its path, or the embedded
// default.
func configName(path string) string {
	if path == "" {
		return "(embedded default config)"
	}
	return path
}

// reportUnkept says, at warn level and naming each, which registrations
// in the state directory this config does not serve: they are kept in the
// file, never dropped silently.
func reportUnkept(f *registrations.File, cfg *config.Config, log zerolog.Logger) {
	declared := map[string]bool{}
	for _, s := range cfg.Servers {
		declared[s.Name] = true
	}
	for _, u := range f.Unkept(func(name string) bool { return declared[name] }) {
		log.Warn().Str("server", u.Name).Str("file", f.Where()).Str("reason", u.Reason).
			Msg("registered server not served with this config; it stays in the state directory")
	}
}

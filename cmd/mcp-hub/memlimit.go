package main

import (
	"errors"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/rs/zerolog"
)

// memLimitRatio is the share of the container's memory limit the Go
// runtime keeps its memory under. The rest is headroom for what the runtime
// does not manage (tree-sitter's C allocations for static-analysis, the
// binary's mapped text): a container that reaches its limit is OOM-killed,
// while a Go runtime near GOMEMLIMIT only collects more often.
const memLimitRatio = 0.9

// setMemoryLimit sets the Go runtime's memory limit (what GOMEMLIMIT sets)
// to memLimitRatio of the limit provider reports (the container's cgroup
// limit in main), unless GOMEMLIMIT is set, and logs the limit in force.
// Without it a hub under load in a 512Mi container grows its heap to
// GOGC's target (the hub runs with GOGC 400) and is killed instead of
// collecting. AUTOMEMLIMIT (a ratio, or off) overrides the ratio, as the
// library documents. It returns the limit in bytes, math.MaxInt64 for none.
func setMemoryLimit(provider memlimit.Provider, log zerolog.Logger) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		limit := debug.SetMemoryLimit(-1)
		log.Info().Str("GOMEMLIMIT", v).Int64("bytes", limit).Msg("memory limit from GOMEMLIMIT")
		return limit
	}
	limit, err := memlimit.Set(memlimit.WithProvider(provider), memlimit.WithRatio(memLimitRatio))
	switch {
	case errors.Is(err, memlimit.ErrCgroupsNotSupported), errors.Is(err, memlimit.ErrNoCgroup):
		log.Debug().Err(err).Msg("memory limit: none (not in a container); GOMEMLIMIT sets one")
	case err != nil:
		log.Warn().Err(err).Msg("memory limit: cannot read the container's memory limit; the Go runtime has none (set GOMEMLIMIT)")
	case limit == math.MaxInt64:
		log.Info().Msg("memory limit: none (the container has no memory limit; GOMEMLIMIT sets one)")
	default:
		log.Info().Int64("bytes", limit).Int64("MiB", limit>>20).Float64("ratio", memLimitRatio).
			Msg("memory limit: the Go runtime keeps under this share of the container's memory limit (GOMEMLIMIT overrides)")
	}
	return limit
}

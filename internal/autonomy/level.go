package autonomy

import (
	"fmt"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Level is how much an agent may do on its own. The values are ordered, so
// the effective level of a request is simply the lower of two (see Lower);
// the zero value is Manual, so a forgotten level allows nothing.
type Level int

// The autonomy levels, from least to most permissive. They follow Purko's
// executor so that the hub refuses exactly what the executor would.
const (
	// Manual allows no tool at all: a human does the work.
	Manual Level = iota
	// Restricted (shu) allows read-only tools only.
	Restricted
	// Supervised (ha) allows every tool; a human reviews afterwards.
	Supervised
	// Full (ri) allows every tool.
	Full
)

var levelNames = [...]string{
	Manual:     "manual",
	Restricted: "restricted",
	Supervised: "supervised",
	Full:       "full",
}

// ParseLevel reads a level from configuration, a header or a token claim.
// It ignores case and surrounding spaces and accepts the Shu-Ha-Ri aliases.
// An empty or unknown value is an error naming the value and the accepted
// ones; there is deliberately no default, because silently picking one
// would either lock an agent out or hand it more than was asked for. On
// error the returned Level is Manual and must not be used. The names are
// toolspec's (CanonicalLevel), which the configuration is checked with:
// one list of names for both.
func ParseLevel(s string) (Level, error) {
	name, err := toolspec.CanonicalLevel(s)
	if err != nil {
		return Manual, fmt.Errorf("autonomy: %w", err)
	}
	for l, n := range levelNames {
		if n == name {
			return Level(l), nil
		}
	}
	return Manual, fmt.Errorf("autonomy: level %q has no value", name) // toolspec names only these four
}

// String returns the canonical lower-case name, the form ParseLevel reads
// back and the one logs and listings show. A value outside the four levels
// prints as Level(n) so that it cannot pass for a real one.
func (l Level) String() string {
	if l >= Manual && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// Lower returns the less permissive of a and b. The hub runs a request at
// Lower(ceiling, requested): a caller may ask for less than it is granted,
// never for more.
func Lower(a, b Level) Level {
	if a < b {
		return a
	}
	return b
}

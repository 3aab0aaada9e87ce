// Package liblog puts what mcp-go's transports and a stdio child write
// into the hub's log: at debug level, since the transports report routine
// events such as a closed stream as errors and the connection loop already
// logs what matters once; and redacted, since they quote URLs and error
// bodies and a child may print its environment. The redactor is asked per
// record: an OAuth access token changes while the logger lives.
package liblog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/secrets"
)

// New returns the logger for mcp-go's transports: log at debug level,
// every message and attribute redacted with r().
func New(log zerolog.Logger, r func() *secrets.Redactor) *slog.Logger {
	return slog.New(redactingHandler{debugOnly{zerolog.NewSlogHandler(log)}, r})
}

type debugOnly struct{ slog.Handler }

func (h debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugOnly{h.Handler.WithAttrs(attrs)}
}

func (h debugOnly) WithGroup(name string) slog.Handler {
	return debugOnly{h.Handler.WithGroup(name)}
}

// redactingHandler redacts the message and attributes of each record with
// r().
type redactingHandler struct {
	slog.Handler
	r func() *secrets.Redactor
}

func (h redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r().String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	r := h.r()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.String(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		red := make([]any, len(attrs))
		for i, ga := range attrs {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, r.String(err.Error()))
		}
		s := fmt.Sprint(v.Any())
		if red := r.String(s); red != s {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return redactingHandler{h.Handler.WithAttrs(red), h.r}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{h.Handler.WithGroup(name), h.r}
}

// Stderr forwards a stdio child's stderr to log at debug level, line by
// line, with redact applied: a child may print the token it was given in
// its environment.
func Stderr(log zerolog.Logger, redact func(string) string) io.Writer {
	return stderrLogger{log: log, redact: redact}
}

type stderrLogger struct {
	log    zerolog.Logger
	redact func(string) string
}

func (w stderrLogger) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.log.Debug().Str("stderr", w.redact(line)).Msg("upstream stderr")
		}
	}
	return len(p), nil
}

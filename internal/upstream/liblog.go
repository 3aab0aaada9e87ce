package upstream

import (
	"context"
	"log/slog"

	"github.com/rs/zerolog"
)

// libLogger gives mcp-go's transports a logger that writes to the hub's log
// at debug level: they report routine events such as a closed stream as
// errors, and the connection loop already logs what matters once.
func libLogger(log zerolog.Logger) *slog.Logger {
	return slog.New(debugOnly{zerolog.NewSlogHandler(log)})
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

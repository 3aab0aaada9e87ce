// Command upstream is the stdio MCP server of the tracing test: it joins the
// trace of every tools/call it runs through the traceparent in the request's
// params._meta (stdio has no headers) and exports a span of its own over
// OTLP/HTTP (the hub's exporter), to where OTEL_EXPORTER_OTLP_ENDPOINT says, as service
// test-stdio-upstream. Each span is exported as it ends, so nothing is lost
// when the hub stops the process.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/tracing"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	exp, err := tracing.NewExporter(ctx, os.LookupEnv)
	if err != nil {
		return fmt.Errorf("OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "test-stdio-upstream"))))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tracer := tp.Tracer("test/tracing/upstream")

	s := server.NewMCPServer("stdio-up", "1")
	s.AddTool(mcp.NewTool("get_stdio"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, span := tracer.Start(parentFromMeta(ctx, r.Params.Meta), "run "+r.Params.Name, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		return mcp.NewToolResultText("ran " + r.Params.Name), nil
	})
	return server.ServeStdio(s)
}

// parentFromMeta is ctx with the W3C trace context of _meta.traceparent and
// _meta.tracestate.
func parentFromMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := meta.AdditionalFields[k].(string); ok {
			c[k] = v
		}
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}

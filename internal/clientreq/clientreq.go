// Package clientreq sends a server's requests to its client (sampling,
// roots, elicitation) for the sessions the hub keeps itself, in place of
// mcp-go's own (WebSocket connections, Streamable HTTP sessions): each
// session brings the one function that sends a request on its transport
// and waits for the answer, and gets mcp-go's session interfaces for them.
package clientreq

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// Requests implements server.SessionWithSampling, SessionWithRoots and
// SessionWithElicitation (less ClientSession) over Call.
type Requests struct {
	// Call sends a request with method and params to the client and
	// decodes the client's answer into out.
	Call func(ctx context.Context, method mcp.MCPMethod, params, out any) error
}

// RequestSampling sends sampling/createMessage to the client.
func (r Requests) RequestSampling(ctx context.Context, request mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var result mcp.CreateMessageResult
	if err := r.Call(ctx, mcp.MethodSamplingCreateMessage, request.CreateMessageParams, &result); err != nil {
		return nil, err
	}
	// Content arrives as a generic map; mcp-go's own transports convert it
	// to the concrete content type callers type-switch on.
	content, err := mcp.ParseSamplingContent(result.Content)
	if err != nil {
		return nil, fmt.Errorf("parse %s result content: %w", mcp.MethodSamplingCreateMessage, err)
	}
	result.Content = content
	return &result, nil
}

// ListRoots sends roots/list to the client.
func (r Requests) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var result mcp.ListRootsResult
	if err := r.Call(ctx, mcp.MethodListRoots, nil, &result); err != nil {
		return nil, err
	}
	return &result, nil
}

// RequestElicitation sends elicitation/create to the client.
func (r Requests) RequestElicitation(ctx context.Context, request mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var result mcp.ElicitationResult
	if err := r.Call(ctx, mcp.MethodElicitationCreate, request.Params, &result); err != nil {
		return nil, err
	}
	return &result, nil
}

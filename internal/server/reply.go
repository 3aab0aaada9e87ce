package server

// The MCP faces answer with the one JSON-RPC encoder (jsonrpc.Reply,
// jsonrpc.ErrorReply, jsonrpc.Refuse): every method the hub serves is
// answered by its dispatcher (internal/dispatch), which encodes the
// handler's result or error itself, so a call ends with the same answer,
// code and data included, whatever the face. mcp-go answers only the
// session layer's requests (initialize, ping, logging/setLevel). The REST
// face has its own encoder (internal/restrun): HTTP status and JSON.

// codeAuthRequired is the JSON-RPC code of a request without a valid
// caller (auth.go): its own, not -32001, which says "session not found"
// (docs/errors.md holds every code the hub answers, one meaning each).
const codeAuthRequired = -32004

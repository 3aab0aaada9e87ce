// Package autonomy holds the hub's autonomy rules: the levels an agent runs
// at, the read-only/write classification of every tool, and the decision
// that joins the two. The hub uses it twice per request, to filter
// tools/list and to refuse tools/call server-side, so that a caller never
// depends on the agent's own executor to stay within its level.
//
// The package imports only the standard library: the registry, the server
// and the config convert their own types into Tool, Overrides and Config, so
// the rules can be read and tested in isolation.
//
// Classification fails closed: a tool is read-only only when some rule says
// so positively; a write verb anywhere in the name beats any read verb, and a
// name nothing recognises is a write.
package autonomy

package config

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"
)

// DefaultApprovalTimeout is approvals.timeout when none is set.
const DefaultApprovalTimeout = 10 * time.Minute

// ApprovalSettings say who approves the calls held by
// guardrails.humanApprovalRequired, how long a call waits, and who hears
// of a new one (docs/security.md "Human approval").
type ApprovalSettings struct {
	// Approvers are the callers that may approve or deny: globs of caller
	// names (a hub token's name, an OAuth caller's issuer/subject as audit
	// lines show it). Empty: every admin caller. An OAuth grant with
	// approver: true adds the callers it matches (by claim). No caller
	// ever decides its own call.
	Approvers []string `json:"approvers,omitempty"`
	// Timeout is how long a held call waits for a decision (default 10m);
	// then the caller gets a BLOCKED result saying so.
	Timeout Duration `json:"timeout,omitempty"`
	// Webhook, when set, receives a JSON POST for every new held call.
	Webhook *ApprovalWebhook `json:"webhook,omitempty"`
}

// ApprovalWebhook is where new held calls are announced (a chat bot).
type ApprovalWebhook struct {
	// URL receives the POSTs; the dial policy of upstreams applies.
	URL string `json:"url"`
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token *TokenRef `json:"token,omitempty"`
	// ConsoleURL is the hub as approvers reach it, the base of the links
	// in each POST (https://hub.example.com); default registryAPI.baseURL
	// or the base of auth.oauth.resource, else links relative to the hub.
	ConsoleURL string `json:"consoleURL,omitempty"`

	// TokenValue is the resolved token.
	TokenValue Secret `json:"-"`
}

func (a *ApprovalSettings) applyDefaults() {
	setDefault(&a.Timeout, Duration(DefaultApprovalTimeout))
}

func (a ApprovalSettings) validate() error {
	for i, p := range a.Approvers {
		if strings.TrimSpace(p) == "" || strings.TrimSpace(p) != p {
			return fmt.Errorf("approvals.approvers[%d]: %q is not a caller name or glob", i, p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("approvals.approvers[%d]: %q is not a valid glob: %w", i, p, err)
		}
	}
	if a.Timeout.D() < time.Second {
		return fmt.Errorf("approvals.timeout: %s is shorter than 1s", a.Timeout.D())
	}
	if w := a.Webhook; w != nil {
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("approvals.webhook.url: not an absolute http(s) URL without user info")
		}
		if w.ConsoleURL != "" {
			c, err := url.Parse(w.ConsoleURL)
			if err != nil || (c.Scheme != "http" && c.Scheme != "https") || c.Host == "" || c.User != nil || c.RawQuery != "" || c.Fragment != "" {
				return fmt.Errorf("approvals.webhook.consoleURL: %q is not an absolute http(s) URL without user info, query or fragment", w.ConsoleURL)
			}
		}
	}
	return nil
}

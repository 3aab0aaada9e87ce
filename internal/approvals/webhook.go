package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Webhook tells someone of every new held call: a JSON POST a chat bot
// turns into a message with approve and deny links. The bot answers
// through the REST API with an approver's credentials; the webhook itself
// decides nothing, so a lost or forged delivery changes nothing.
type Webhook struct {
	// URL receives the POSTs.
	URL string
	// Authorization, when not "", is sent as the Authorization header
	// (a credential: never logged).
	Authorization string
	// ConsoleURL is the hub's address as approvers reach it, the base of
	// the links ("" for links relative to the hub).
	ConsoleURL string
	// Client sends the POSTs under the hub's dial policy.
	Client *http.Client
}

// webhookTimeout bounds one delivery.
const webhookTimeout = 10 * time.Second

// WebhookEvent is the body of a webhook POST.
type WebhookEvent struct {
	Type     string  `json:"type"` // approval.requested
	Approval Pending `json:"approval"`
	Links    struct {
		// Console opens the console's Approvals panel on this call.
		Console string `json:"console"`
		// Decide is where to POST {"decision":"approve"} or
		// {"decision":"deny","reason":"..."} as an approver.
		Decide string `json:"decide"`
	} `json:"links"`
}

// notify delivers the webhook of p in the background; the Gate waits for
// deliveries in flight when it closes.
func (g *Gate) notify(p Pending) {
	if g.webhook == nil {
		return
	}
	ev := WebhookEvent{Type: "approval.requested", Approval: p}
	base := strings.TrimSuffix(g.webhook.ConsoleURL, "/")
	ev.Links.Console = base + "/console/#approval=" + p.ID
	ev.Links.Decide = base + "/api/mcp/approvals/" + p.ID
	g.hooks.Go(func() {
		if err := g.webhook.deliver(g.life, ev); err != nil {
			g.log.Warn().Err(err).Str("approval", p.ID).Msg("approval webhook not delivered (the call still waits: approve it in the console or with mcp-hub approvals)")
		}
	})
}

// where names the webhook in errors: scheme and host only, since a
// webhook's path often is its secret (a chat's incoming-webhook URL).
func (w *Webhook) where() string {
	u, err := url.Parse(w.URL)
	if err != nil || u.Host == "" {
		return "the configured URL"
	}
	return u.Scheme + "://" + u.Host
}

// deliver POSTs ev once, until ctx ends or webhookTimeout has passed.
func (w *Webhook) deliver(ctx context.Context, ev WebhookEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode the approval webhook: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("approval webhook at %s: the URL is not one a request can go to", w.where()) // err repeats the URL
	}
	req.Header.Set("Content-Type", "application/json")
	if w.Authorization != "" {
		req.Header.Set("Authorization", w.Authorization)
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the whole URL
		}
		return fmt.Errorf("approval webhook: POST to %s: %w", w.where(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("approval webhook: POST to %s: %s", w.where(), resp.Status)
	}
	return nil
}

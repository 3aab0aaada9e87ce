package statustext

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/upstream/answerlog"
)

// hunter2 stands for whatever an internal page or service at a registered
// URL may say: it must stay out of the status everyone reads.
const hunter2 = "password=hunter2"

// redactor removes the test credential, as credentials.Set does.
type redactor struct{ r *secrets.Redactor }

func (r redactor) Redact(err error) error  { return Tidy(r.r.Error(err)) }
func (r redactor) Text(text string) string { return r.r.String(text) }

// The last line of defence: an error whose text quotes what a kept answer
// said, in a form no rule above knows, is not shown.
func TestExplainHidesEchoes(t *testing.T) {
	var answers answerlog.Log
	f := Failures{Answers: &answers, Redactor: redactor{secrets.NewRedactor("s3cr3t-bearer-T0KEN")}}
	said := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"note\":\""+hunter2+"\"}}\n\n")
	}))
	defer said.Close()
	resp, err := answers.Wrap(said.Client()).Get(said.URL) // the answer is kept as it is read
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("failed to unmarshal response: %w", fmt.Errorf("odd value %q", hunter2)), "list tools: the upstream's answer could not be used (its text is in the detail, for admins)"},
		{fmt.Errorf("failed to unmarshal response: %w", errors.New("json: cannot unmarshal number")), "list tools: failed to unmarshal response: json: cannot unmarshal number"},
	} {
		public, detail := f.explain("list tools", tc.err)
		if public != tc.want || strings.Contains(public, "hunter2") || detail == "" && public != tc.err.Error() && !strings.HasSuffix(public, tc.err.Error()) {
			t.Errorf("explain(%v) = %q, %q; want %q", tc.err, public, detail, tc.want)
		}
	}
}

func TestTidy(t *testing.T) {
	base := errors.New("connection refused")
	for _, tc := range []struct{ in, want string }{
		{"initialize: failed to send request: failed to send request: connection refused", "initialize: failed to send request: connection refused"},
		{"a: b: a: b", "a: b: a: b"},
		{"x: y", "x: y"},
	} {
		err := Tidy(Reworded(tc.in, base))
		if err.Error() != tc.want || !errors.Is(err, base) {
			t.Errorf("Tidy(%q) = %q (Is base: %v), want %q", tc.in, err, errors.Is(err, base), tc.want)
		}
	}
}

package secrets

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedactorString(t *testing.T) {
	const tok = "s3cr3t-T0KEN/value+42"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pa55-w0rd-XYZ"))
	r := NewRedactor(tok, basic, "", "  ", "7", "json")
	cases := []struct {
		name, in, want string
	}{
		{"plain", "bad token Bearer " + tok, "bad token Bearer [redacted]"},
		{"twice", tok + "," + tok, "[redacted],[redacted]"},
		{"query-escaped", "key=" + url.QueryEscape(tok) + "&x=1", "key=[redacted]&x=1"},
		{"path-escaped", "/v1/" + url.PathEscape(tok) + "/x", "/v1/[redacted]/x"},
		{"json-escaped slash", `{"auth":"` + strings.ReplaceAll(tok, "/", `\/`) + `"}`, `{"auth":"[redacted]"}`},
		{"json", mustJSON(t, map[string]string{"auth": tok}), `{"auth":"[redacted]"}`},
		{"base64", "echo " + base64.StdEncoding.EncodeToString([]byte(tok)), "echo [redacted]"},
		{"base64url", "echo " + base64.RawURLEncoding.EncodeToString([]byte(tok)), "echo [redacted]"},
		{"basic header", "got " + basic, "got Basic [redacted]"},
		{"bearer header", "got Bearer " + tok, "got Bearer [redacted]"},
		{"basic credential only", "got " + strings.TrimPrefix(basic, "Basic "), "got [redacted]"},
		{"basic decoded", "user alice:pa55-w0rd-XYZ", "user [redacted]"},
		{"basic password", "password pa55-w0rd-XYZ wrong", "password [redacted] wrong"},
		{"short secret alone", "tenant 7 unknown", "tenant [redacted] unknown"},
		{"short secret inside a word", "HTTP 470 at port 17", "HTTP 470 at port 17"},
		{"short secret as a word", "application/json", "application/[redacted]"},
		{"cut at the end", "bad token " + tok[:9], "bad token [redacted]"},
		{"cut at the end, long", "bad token " + tok[:len(tok)-1], "bad token [redacted]"},
		{"too short a cut", "ends with s3c", "ends with s3c"},
		{"nothing", "all fine", "all fine"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%s: String(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRedactorOverlapsAndEmpty(t *testing.T) {
	r := NewRedactor("abcdefgh-1", "defgh-1-xyz12")
	if got := r.String("abcdefgh-1-xyz12!"); got != "[redacted]!" {
		t.Errorf("overlapping secrets = %q", got)
	}
	for _, empty := range []*Redactor{nil, NewRedactor(), NewRedactor("", " ")} {
		if !empty.Empty() || empty.String("a b") != "a b" {
			t.Errorf("empty redactor changed text or is not empty")
		}
	}
}

func TestRedactorErrorKeepsChain(t *testing.T) {
	r := NewRedactor("hunter2-long-token")
	base := fmt.Errorf("call x: %w: bad token hunter2-long-token", context.DeadlineExceeded)
	err := r.Error(base)
	if err.Error() != "call x: context deadline exceeded: bad token [redacted]" {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("redacted error lost its chain")
	}
	clean := errors.New("nothing secret")
	if r.Error(clean) != clean || r.Error(nil) != nil {
		t.Error("an error without secrets was replaced")
	}
}

func TestRedactorJSON(t *testing.T) {
	r := NewRedactor("hunter2-long-token", "7", "123456789012", `back\slash-secret`)
	cases := []struct{ in, want string }{
		{`{"echo":"Bearer hunter2-long-token"}`, `{"echo":"Bearer [redacted]"}`},
		// Replacing the word 7 would break the JSON: the values are
		// redacted one by one, and a number only by a long secret.
		{`{"n":7,"s":"7 of 9"}`, `{"n":7,"s":"[redacted] of 9"}`},
		{`{"z":1, "pin": 123456789012, "a":[true,null,"x"]}`, `{"z":1,"pin":"[redacted]","a":[true,null,"x"]}`},
		// The raw secret ends in the middle of an escape sequence of
		// another string; the value-by-value pass finds the real one.
		{`{"k":"back\\slash-secret\"","v":"back\\slash-secret"}`, `{"k":"[redacted]\"","v":"[redacted]"}`},
		{`{"ok":true}`, `{"ok":true}`},
		{`not json 7`, ``}, // nothing to keep valid: dropped
	}
	for _, tc := range cases {
		if got := string(r.JSON(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("JSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// Results keep the words a configured header or query value may share
// with them, and lose every token.
func TestRedactorResult(t *testing.T) {
	r := NewRedactor("Bearer s3cr3t-bearer-T0KEN", "platform", "json", "production", "correcthorsebatterystaple", "k3y-42-abc")
	for _, tc := range []struct{ in, want string }{
		{`{"text":"the platform team; format json; production"}`, `{"text":"the platform team; format json; production"}`},
		{`{"text":"Authorization: Bearer s3cr3t-bearer-T0KEN, key k3y-42-abc"}`, `{"text":"Authorization: Bearer [redacted], key [redacted]"}`},
		{`{"text":"pw correcthorsebatterystaple"}`, `{"text":"pw [redacted]"}`},
	} {
		if got := string(r.Result(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("Result(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// Errors still lose them all.
	if got := r.String("platform json"); got != "[redacted] [redacted]" {
		t.Errorf("String = %q", got)
	}
}

// A result without a secret passes as it is: the same bytes, no copy.
func TestRedactorResultNoSecretNoAllocation(t *testing.T) {
	r := NewRedactor("Bearer s3cr3t-bearer-T0KEN", "k3y-in-a-header-42")
	in := []byte(`{"content":[{"type":"text","text":"nothing to see here"}]}`)
	allocs := testing.AllocsPerRun(100, func() {
		if out := r.Result(in); &out[0] != &in[0] {
			t.Fatal("a clean result was copied")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations for a clean result, want 0", allocs)
	}
	if out := r.Result([]byte(`"s3cr3t-bearer-T0KEN"`)); string(out) != `"[redacted]"` {
		t.Errorf("Result = %s", out)
	}
}

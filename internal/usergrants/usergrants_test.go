package usergrants

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/usergrants/store"
)

func TestMayHold(t *testing.T) {
	for _, tc := range []struct {
		user string
		ok   bool
	}{
		{"alice", true},
		{"https://login.example.com/ alice", true},
		{"anonymous@127.0.0.1", true},
		{"anonymous@::1", true},
		{"anonymous@10.1.2.3", false},
		{"anonymous@2001:db8::/64", false},
		{"", false},
	} {
		if err := mayHold(tc.user); (err == nil) != tc.ok {
			t.Errorf("mayHold(%q) = %v, want ok %v", tc.user, err, tc.ok)
		}
	}
}

func newBroker(t *testing.T, public string) *Broker {
	t.Helper()
	b, err := New(Options{Store: store.File(filepath.Join(t.TempDir(), "grants.sealed")), Keys: newKeyring(t), PublicURL: public,
		Replica: "r", Log: zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSignInNeedsAnAddress: a hub that serves no HTTP (stdio) says why it
// cannot offer a sign-in, and learns its address when it listens.
func TestSignInNeedsAnAddress(t *testing.T) {
	b := newBroker(t, "")
	s := b.For(config.ServerSpec{Name: "notes", UserOAuth: &config.UserOAuth{}})
	if _, _, err := s.Token(context.Background(), "alice"); err == nil || !strings.Contains(err.Error(), "serves no sign-in pages") {
		t.Fatalf("without an address: %v", err)
	}
	if got := s.Any(context.Background()); got != "" {
		t.Fatalf("Any without grants = %q", got)
	}
	b.DefaultPublicURL("http://localhost:8080/")
	b.DefaultPublicURL("http://elsewhere:1") // the first address stays
	_, _, err := s.Token(context.Background(), "alice")
	if link := signInLink(t, err); !strings.HasPrefix(link, "http://localhost:8080"+ConnectPath) {
		t.Fatalf("link %s", link)
	}
}

// TestForCaller: a sign-in link reaches a caller that takes no URL
// elicitation as a BLOCKED text with the link; any other error, and any
// error to a caller that takes it, as it is.
func TestForCaller(t *testing.T) {
	b := newBroker(t, "https://hub.example.com")
	s := b.For(config.ServerSpec{Name: "notes", UserOAuth: &config.UserOAuth{}})
	_, _, signIn := s.Token(context.Background(), "alice")
	link := signInLink(t, signIn)

	res, err := ForCaller(false, signIn)
	var out struct {
		IsError bool `json:"isError"`
		Content []struct{ Text string }
	}
	if err != nil || json.Unmarshal(res, &out) != nil || !out.IsError || len(out.Content) != 1 ||
		!strings.HasPrefix(out.Content[0].Text, "BLOCKED: upstream notes is reached with each caller's own account there, and you have not signed in yet.") ||
		!strings.HasSuffix(out.Content[0].Text, "Open: "+link) {
		t.Fatalf("ForCaller(false, sign-in) = %s, %v", res, err)
	}
	if res, err := ForCaller(true, signIn); res != nil || err != signIn {
		t.Errorf("ForCaller(true, sign-in) = %s, %v", res, err)
	}
	other := errors.New("upstream notes: 502")
	if res, err := ForCaller(false, other); res != nil || err != other {
		t.Errorf("ForCaller(false, other) = %s, %v", res, err)
	}
}

// TestGrantOfAnotherIssuer: a grant is never sent to a server whose
// settings name another authorization server than the one that issued
// it; its caller signs in again.
func TestGrantOfAnotherIssuer(t *testing.T) {
	b := newBroker(t, "https://hub.example.com")
	key := grantKey("notes", "alice")
	g := Grant{User: "alice", Server: "notes", Issuer: "https://a.example.com", AccessToken: "token-of-a"}
	if err := b.opts.Store.Update(context.Background(), func(recs map[string][]byte) error { return b.seal(recs, key, g) }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		issuer string
		want   string // token; "" for a sign-in
	}{{"https://a.example.com", "token-of-a"}, {"https://b.example.com", ""}} {
		s := b.For(config.ServerSpec{Name: "notes", UserOAuth: &config.UserOAuth{Issuer: tc.issuer}})
		tok, _, err := s.Token(context.Background(), "alice")
		if tc.want == "" {
			signInLink(t, err)
			continue
		}
		if tok != tc.want || err != nil {
			t.Errorf("issuer %s: %q %v", tc.issuer, tok, err)
		}
	}
}

package oauthclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTokenClientRepeatsOnClosedConnection: a token service that closes a
// kept-alive connection under a token request (a restart, an idle timeout)
// costs a new connection, not the caller's call; the marking is never
// sent.
func TestTokenClientRepeatsOnClosedConnection(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			// The second request arrives on the first one's connection:
			// close it unanswered.
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if _, sent := r.Header["Idempotency-Key"]; sent {
			http.Error(w, "Idempotency-Key sent", http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"access_token":"t","token_type":"Bearer"}`)
	}))
	t.Cleanup(srv.Close)
	for name, hc := range map[string]*http.Client{"plain": srv.Client(), "token": TokenClient(srv.Client().Transport, 5*time.Second)} {
		n.Store(0)
		var errs []string
		for range 2 {
			resp, err := hc.PostForm(srv.URL+"/token", url.Values{"grant_type": {"client_credentials"}})
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs = append(errs, resp.Status)
			}
		}
		switch name {
		case "plain": // the fault this guards against is real
			if len(errs) != 1 || !strings.Contains(errs[0], "EOF") {
				t.Fatalf("a plain client: errors %v, want one EOF", errs)
			}
		case "token":
			if len(errs) != 0 || n.Load() != 3 {
				t.Fatalf("the token client: errors %v after %d requests, want none after 3 (one closed unanswered, repeated once)", errs, n.Load())
			}
		}
	}
}

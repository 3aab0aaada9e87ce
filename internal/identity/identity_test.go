package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSubjectNeverPrints: no verb of fmt and no JSON shows the token, of
// any kind, alone or inside a struct.
func TestSubjectNeverPrints(t *testing.T) {
	const raw = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.sig"
	for _, s := range []Subject{
		OAuthSubject(raw, "https://idp.example", time.Now().Add(time.Hour)),
		ServiceAccountSubject(raw),
		{token: raw}, // a kind None that still holds one
	} {
		js, err := json.Marshal(struct{ S Subject }{s})
		if err != nil {
			t.Fatal(err)
		}
		out := fmt.Sprintf("%v %+v %#v %s %q %s", s, s, s, s, s, js)
		if strings.Contains(out, raw) || strings.Contains(out, "eyJ") {
			t.Fatalf("a subject printed its token: %s", out)
		}
	}
}

// TestCarried: the Subject and the Seen travel in the context as they
// were put in; a Subject of kind None is not carried at all.
func TestCarried(t *testing.T) {
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	s := OAuthSubject("tok", "https://idp.example", exp)
	got := SubjectFrom(WithSubject(context.Background(), s))
	if got.Kind() != OAuth || got.Issuer() != "https://idp.example" || !got.Expiry().Equal(exp) || got.RevealToken() != "tok" {
		t.Fatalf("carried %v, want the OAuth subject put in", got)
	}
	if sa := ServiceAccountSubject("sa"); sa.Kind() != ServiceAccount || !sa.Expiry().IsZero() || sa.Issuer() != "" || sa.Pod() != "" {
		t.Fatalf("service account subject %v", sa)
	}
	if sa := SubjectFrom(WithSubject(context.Background(), ServiceAccountSubject("sa").BoundToPod("uid-1"))); sa.Pod() != "uid-1" || sa.RevealToken() != "sa" {
		t.Fatalf("a pod-bound subject carried as %v, pod %q", sa, sa.Pod())
	}
	if o := s.BoundToPod("uid-1"); o.Pod() != "" {
		t.Fatalf("an OAuth subject took a pod: %q", o.Pod())
	}
	ctx := context.Background()
	if WithSubject(ctx, Subject{}) != ctx || SubjectFrom(ctx).Kind() != None {
		t.Fatal("a subject without a token was carried")
	}

	if SeenIn(ctx) != nil {
		t.Fatal("a Seen in a context that asked for none")
	}
	sctx, seen := WithSeen(ctx)
	*SeenIn(sctx) = Seen{Subject: "alice", Actor: "mcp-hub"}
	if *seen != (Seen{Subject: "alice", Actor: "mcp-hub"}) {
		t.Fatalf("seen %+v: the exchange's record did not reach the asker", seen)
	}
}

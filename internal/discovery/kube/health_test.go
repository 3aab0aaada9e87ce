package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestUnreachable: only an error that says the API server did not answer
// (no connection, or a 5xx) is an outage; an answer that refuses or a
// watch that closed is the server speaking.
func TestUnreachable(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/configmaps", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	gr := schema.GroupResource{Group: "purko.io", Resource: "mcpservers"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused, true},
		{"connection refused, wrapped by the reflector", fmt.Errorf("failed to list *unstructured.Unstructured: %w", refused), true},
		{"timeout", &net.DNSError{Err: "timeout", IsTimeout: true}, true},
		{"503", apierrors.NewServiceUnavailable("etcd is gone"), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New("no RBAC")), false},
		{"not found (CRD deleted)", fmt.Errorf("failed to list: %w", apierrors.NewNotFound(gr, "")), false},
		{"gone (watch expired)", apierrors.NewResourceExpired("too old"), false},
		{"watch closed", io.EOF, false},
		{"watch cut", io.ErrUnexpectedEOF, false},
		{"canceled", fmt.Errorf("list: %w", context.Canceled), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unreachable(tc.err); got != tc.want {
				t.Fatalf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestAPIState: an outage begins with the first failure and keeps that
// time; only an answer to a question asked after the last failure ends it
// (a poll that was under way when a watch failed does not).
func TestAPIState(t *testing.T) {
	down := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/version", Err: syscall.ECONNREFUSED}
	t0 := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		fail   bool // else answered
		at     int  // seconds after t0: of the failure, or of the question answered
		err    error
		outage bool // after the step
		since  int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"healthy", []step{{at: 1}}},
		{"a refusal is no outage", []step{{fail: true, at: 1, err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))}}},
		{"down then up", []step{
			{fail: true, at: 1, err: down, outage: true, since: 1},
			{fail: true, at: 5, err: down, outage: true, since: 1},
			{at: 4, outage: true, since: 1}, // asked before the last failure
			{at: 6},
		}},
		{"down again later", []step{
			{fail: true, at: 1, err: down, outage: true, since: 1},
			{at: 2},
			{fail: true, at: 30, err: down, outage: true, since: 30},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &apiState{log: zerolog.Nop()}
			for i, st := range tc.steps {
				if st.fail {
					a.failed(at(st.at), st.err)
				} else {
					a.answered(at(st.at))
				}
				o, ok := a.outage()
				if ok != st.outage || ok && !o.Since.Equal(at(st.since)) {
					t.Fatalf("step %d: outage %v %+v, want %v since %v", i, ok, o, st.outage, at(st.since))
				}
				if ok && (o.Source != SourceName || o.String() != "kubernetes API unreachable since "+at(st.since).Format(time.RFC3339)) {
					t.Fatalf("step %d: outage %+v reads %q", i, o, o.String())
				}
			}
		})
	}
}

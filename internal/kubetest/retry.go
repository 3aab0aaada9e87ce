package kubetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

type runtimeObject = runtime.Object

type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent wraps err so that Retry and Eventually stop retrying and return it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Retry calls fn every 100ms (up to 1s apart, growing) until it returns nil, a
// Permanent error, ctx ends, or timeout (if > 0) passes. It returns the last
// error of fn.
func Retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	delay := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		var p permanentError
		if errors.As(err, &p) {
			return p.err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", err, ctx.Err())
		case <-time.After(delay):
		}
		if delay < time.Second {
			delay += delay / 2
		}
	}
}

// Eventually retries fn (see Retry) for up to timeout (DefaultTimeout if 0) and
// fails t with fn's last error if it never succeeds. Use it for the first custom
// resources after a CRD, or for anything the API server settles asynchronously
// (RBAC changes are immediate; CRD serving is not).
func Eventually(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := Retry(context.Background(), timeout, fn); err != nil {
		t.Fatalf("kubetest: Eventually: %v", err)
	}
}

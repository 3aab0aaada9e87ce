package edge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Body size: no request body is read past http.maxBodyBytes, and a body
// that is not sent within http.readTimeout is not waited for.

// LimitBody bounds every request body: a declared length over the limit is
// refused before anything is read, and a body without one (chunked) stops
// at the limit with *http.MaxBytesError, which the readers answer with 413.
func (e *Edge) LimitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > e.maxBody {
			jsonrpc.Refuse(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, nil, e.tooLarge(r.ContentLength))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, e.maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// tooLarge says that a body of n bytes (-1: unknown) is over the limit.
func (e *Edge) tooLarge(n int64) string {
	size := "request body"
	if n >= 0 {
		size = fmt.Sprintf("request body of %d bytes", n)
	}
	return fmt.Sprintf("%s is larger than the hub's limit of %d bytes (%s, http.maxBodyBytes)", size, e.maxBody, mib(e.maxBody))
}

func mib(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
}

// ReadBody reads a request body for a face. A body over the limit set by
// LimitBody answers 413, one that does not arrive within the read timeout
// 408; both report false. The body is left readable again in r.
func (e *Edge) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := e.readAll(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			jsonrpc.Refuse(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, nil, e.tooLarge(-1))
		case errors.Is(err, os.ErrDeadlineExceeded):
			jsonrpc.Refuse(w, http.StatusRequestTimeout, jsonrpc.CodeInvalidRequest, nil, fmt.Sprintf(
				"request body not received within %s (http.readTimeout)", e.readTimeout))
		default:
			jsonrpc.Refuse(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, nil, "read request body: "+err.Error())
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// readAll reads a request's body: at once into a buffer of its declared
// length when that is within the body limit (LimitBody's reader still
// bounds what is read), else as it comes.
func (e *Edge) readAll(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > e.maxBody {
		return io.ReadAll(r.Body)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

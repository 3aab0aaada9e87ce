package secrets

import (
	"net/http"
	"net/url"
)

// plainHeaders are configured headers whose values say how to talk, not who
// is talking: they are not redacted.
var plainHeaders = map[string]bool{"Accept": true, "Accept-Language": true, "Content-Type": true, "User-Agent": true}

// OfEndpoint returns the credentials an endpoint's configuration carries
// besides its token: the values of its static headers (but the plain
// ones), and its URL's userinfo and query. Upstreams and api tools redact
// the same things, so they ask the same function.
func OfEndpoint(rawURL string, headers map[string]string) []string {
	var vals []string
	for k, v := range headers {
		if !plainHeaders[http.CanonicalHeaderKey(k)] {
			vals = append(vals, v)
		}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return vals
	}
	if u.User != nil {
		vals = append(vals, u.User.String(), u.User.Username())
		if pw, ok := u.User.Password(); ok {
			vals = append(vals, pw)
		}
	}
	if u.RawQuery != "" {
		vals = append(vals, u.RawQuery)
		for _, vs := range u.Query() {
			vals = append(vals, vs...)
		}
	}
	return vals
}

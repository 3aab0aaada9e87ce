package hubtest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"time"
)

// FollowRedirects plays a browser (with cookies) from start through every
// redirect until one to redirectURI (scheme, host and path; the query is
// the sender's), which it returns without requesting it: an OAuth
// authorization request through an IdP's login and consent to the
// client's redirect URI, as the IdP harnesses (hydra/, idp/) drive it. A
// flow that ends anywhere else is an error that says where.
func FollowRedirects(start, redirectURI string) (*url.URL, error) {
	target, err := url.Parse(redirectURI)
	if err != nil {
		return nil, fmt.Errorf("parse the redirect URI: %w", err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	var final *url.URL
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if u := req.URL; u.Scheme == target.Scheme && u.Host == target.Host && u.Path == target.Path {
				final = u
				return http.ErrUseLastResponse
			}
			if len(via) > 20 {
				return errors.New("more than 20 redirects")
			}
			return nil
		}}
	resp, err := browser.Get(start)
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	resp.Body.Close()
	if final == nil {
		return nil, fmt.Errorf("ended at %s (%s), not at %s: %s", resp.Request.URL, resp.Status, redirectURI, raw)
	}
	return final, nil
}

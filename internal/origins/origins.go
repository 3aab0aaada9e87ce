// Package origins says what a browser Origin looks like: exactly what a
// browser sends in the Origin header of an http(s) page, scheme://host[:port],
// so that a configured list (http.allowedOrigins) can be compared with the
// header as written.
package origins

import (
	"fmt"
	"net/url"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Check accepts o if a browser could send it as the Origin of an http or
// https page; "*" is refused: any web page could then drive the hub with
// the browser's network position.
func Check(o string) error {
	if o == "*" {
		return fmt.Errorf(`"*" is not allowed: it would let any web page call the hub; list each origin`)
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an http or https origin (scheme://host[:port])", o)
	}
	if err := toolspec.ValidatePort(u.Port()); err != nil {
		return fmt.Errorf("%q: %w", o, err)
	}
	if u.Scheme+"://"+u.Host != o {
		return fmt.Errorf("%q must be scheme://host[:port] alone: no path, query, fragment, user info or upper-case scheme", o)
	}
	return nil
}

// Package console is the hub's web console: one page (plain HTML, CSS and
// JavaScript, embedded in the binary, no build step and nothing fetched from
// elsewhere) that reads the hub's own JSON endpoints and event stream. It
// holds no data and no credentials: the page asks the hub for everything,
// sending the operator's token in a header, never a cookie.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every asset: the page may load and
// connect to nothing but the hub itself, and may not be framed.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console: the page at / and its assets under
// /console/ (with the Connect panel's snippets, connect.go). Mount it on
// both.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/console/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == connectPath {
			serveConnect(w, r)
			return
		}
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, sub, "index.html")
			return
		}
		files.ServeHTTP(w, r)
	})
}

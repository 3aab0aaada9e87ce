package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/purko-io/mcp-hub/internal/clientconfig"
)

// connectPath serves the Connect panel's snippets: for each MCP client,
// what `mcp-hub connect CLIENT --print` prints, built by the same code
// (internal/clientconfig), for the hub at the URL the page was loaded
// from. A token is always the placeholder: the console never puts a real
// one in a snippet.
const connectPath = "/console/connect.json"

// TokenPlaceholder stands for the caller's token in the snippets.
const TokenPlaceholder = "<token>"

type connectClient struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Path    string `json:"path"`
	Snippet string `json:"snippet"`
	Note    string `json:"note,omitempty"`
	Command string `json:"command"`
}

// serveConnect answers GET /console/connect.json?url=URL&auth=token|oauth|none&os=linux|darwin|windows.
func serveConnect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	hub := clientconfig.Hub{URL: q.Get("url")}
	switch q.Get("auth") {
	case "token":
		hub.Token = TokenPlaceholder
	case "oauth":
		hub.OAuth = true
	case "", "none":
	default:
		connectError(w, errors.New("auth: want token, oauth or none"))
		return
	}
	goos := q.Get("os")
	switch goos {
	case "":
		goos = "linux"
	case "linux", "darwin", "windows":
	default:
		connectError(w, errors.New("os: want linux, darwin or windows"))
		return
	}
	// Paths as the user writes them: ~ for the home directory.
	env := clientconfig.Env{Home: "~", GOOS: goos}
	if goos == "windows" {
		env.Home = "%USERPROFILE%"
		env.Getenv = func(k string) string {
			if k == "APPDATA" {
				return "%APPDATA%"
			}
			return ""
		}
	}
	out := struct {
		URL     string          `json:"url"`
		Clients []connectClient `json:"clients"`
	}{URL: hub.URL}
	for _, id := range clientconfig.Clients() {
		ch, err := clientconfig.Plan(id, hub, env)
		if ch.Snippet == "" {
			connectError(w, err)
			return
		}
		path := ch.Path
		if goos == "windows" {
			path = strings.ReplaceAll(path, "/", `\`)
		}
		out.Clients = append(out.Clients, connectClient{ID: id, Title: clientconfig.Title(id), Path: path,
			Snippet: ch.Snippet, Note: ch.Note, Command: "mcp-hub connect " + id + " --hub " + strings.TrimSuffix(hub.URL, "/mcp")})
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // the snippets are text, shown as text
	_ = enc.Encode(out)
}

func connectError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

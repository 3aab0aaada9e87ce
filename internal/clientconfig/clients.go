package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
)

// spec is one client: where its file is and how the hub is written in it.
type spec struct {
	id, title string
	path      func(Env) string
	// ref is how the client's file refers to an environment variable
	// (nil: it cannot).
	ref   func(name string) string
	build func(h Hub, auth string) entry
	// section is where the servers are in a JSON file (nil: TOML).
	section []string
	// jsonc: the client reads comments and trailing commas in its file.
	jsonc bool
	// signIn is what the user does to run an OAuth flow.
	signIn string
}

// entry is the hub as one client writes it.
type entry struct {
	value any    // the server's JSON object, or
	toml  string // its TOML table
	input any    // VS Code: the input the token is asked with
	note  string
}

const inputID = "mcp-hub-token"

// specs is every client, in the order the console shows them: built on
// each call, so no caller can change another's.
func specs() []spec {
	return []spec{
		{id: "claude-code", title: "Claude Code", section: []string{"mcpServers"},
			path: func(e Env) string { return filepath.Join(e.Home, ".claude.json") },
			ref:  func(v string) string { return "${" + v + "}" },
			build: func(h Hub, auth string) entry {
				return entry{value: withHeader(obj{{"type", "http"}, {"url", h.URL}}, auth)}
			},
			signIn: "sign in from Claude Code: /mcp, then Authenticate"},
		{id: "claude-desktop", title: "Claude Desktop", section: []string{"mcpServers"},
			path: func(e Env) string { return filepath.Join(appConfig(e), "Claude", "claude_desktop_config.json") },
			build: func(h Hub, auth string) entry {
				// Claude Desktop runs stdio servers from its file: mcp-remote
				// bridges to the hub. The header's value comes from env, where
				// a space in it is safe on every OS.
				args := []any{"-y", "mcp-remote", h.URL}
				if u, _ := url.Parse(h.URL); u.Scheme == "http" && !loopback(u.Hostname()) {
					args = append(args, "--allow-http")
				}
				o := obj{{"command", "npx"}, {"args", args}}
				if auth != "" {
					o[1].v = append(args, "--header", "Authorization:${AUTH_HEADER}")
					o = append(o, field{"env", obj{{"AUTH_HEADER", auth}}})
				}
				return entry{value: o, note: "Claude Desktop starts the hub's bridge with npx (Node.js 18 or later); restart Claude Desktop to load it"}
			},
			signIn: "mcp-remote opens a browser to sign in when Claude Desktop starts it"},
		{id: "vscode", title: "VS Code", section: []string{"servers"}, jsonc: true,
			path: func(e Env) string { return filepath.Join(appConfig(e), "Code", "User", "mcp.json") },
			ref:  func(v string) string { return "${env:" + v + "}" },
			build: func(h Hub, auth string) entry {
				return entry{value: withHeader(obj{{"type", "http"}, {"url", h.URL}}, auth)}
			},
			signIn: "VS Code asks to sign in when the server starts"},
		{id: "cursor", title: "Cursor", section: []string{"mcpServers"},
			path: func(e Env) string { return filepath.Join(e.Home, ".cursor", "mcp.json") },
			ref:  func(v string) string { return "${env:" + v + "}" },
			build: func(h Hub, auth string) entry {
				return entry{value: withHeader(obj{{"url", h.URL}}, auth)}
			},
			signIn: "Cursor shows Needs login in its MCP settings: click it to sign in"},
		{id: "windsurf", title: "Windsurf", section: []string{"mcpServers"},
			path: func(e Env) string { return filepath.Join(e.Home, ".codeium", "windsurf", "mcp_config.json") },
			ref:  func(v string) string { return "${env:" + v + "}" },
			build: func(h Hub, auth string) entry {
				return entry{value: withHeader(obj{{"serverUrl", h.URL}}, auth)}
			},
			signIn: "Windsurf opens a browser to sign in on first use"},
		{id: "zed", title: "Zed", section: []string{"context_servers"}, jsonc: true,
			path: func(e Env) string {
				if e.GOOS == "windows" {
					return filepath.Join(appConfig(e), "Zed", "settings.json")
				}
				return filepath.Join(xdgConfig(e), "zed", "settings.json")
			},
			build: func(h Hub, auth string) entry {
				return entry{value: withHeader(obj{{"url", h.URL}}, auth)}
			},
			signIn: "Zed asks to sign in when the server starts"},
		{id: "codex", title: "Codex", path: func(e Env) string {
			if d := e.get("CODEX_HOME"); d != "" {
				return filepath.Join(d, "config.toml")
			}
			return filepath.Join(e.Home, ".codex", "config.toml")
		}, build: codexEntry},
		{id: "gemini", title: "Gemini CLI", section: []string{"mcpServers"}, jsonc: true,
			path: func(e Env) string { return filepath.Join(e.Home, ".gemini", "settings.json") },
			ref:  func(v string) string { return "${" + v + "}" },
			build: func(h Hub, auth string) entry {
				return entry{value: withHeader(obj{{"httpUrl", h.URL}}, auth)}
			},
			signIn: "sign in from Gemini CLI: /mcp auth NAME"},
	}
}

func withHeader(o obj, auth string) obj {
	if auth == "" {
		return o
	}
	return append(o, field{"headers", obj{{"Authorization", auth}}})
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// appConfig is where desktop apps keep their settings on e's OS.
func appConfig(e Env) string {
	switch e.GOOS {
	case "darwin":
		return filepath.Join(e.Home, "Library", "Application Support")
	case "windows":
		if d := e.get("APPDATA"); d != "" {
			return d
		}
		return filepath.Join(e.Home, "AppData", "Roaming")
	}
	return xdgConfig(e)
}

func xdgConfig(e Env) string {
	if d := e.get("XDG_CONFIG_HOME"); d != "" && e.GOOS != "darwin" {
		return d
	}
	return filepath.Join(e.Home, ".config")
}

// entry is the hub as c writes it: the header from a variable where c reads
// variables and one is named, else the token itself.
func (c spec) entry(h Hub) (entry, error) {
	var auth, note string
	switch {
	case h.OAuth:
		note = c.signIn
	case c.id == "codex":
		if h.TokenEnv == "" && h.Token == "" {
			break
		}
		e := codexEntry(h, "")
		if h.TokenEnv != "" {
			e.note = "set " + h.TokenEnv + " to the hub's token in the environment Codex starts in"
		}
		return e, nil
	case h.TokenEnv != "" && c.ref != nil:
		auth = "Bearer " + c.ref(h.TokenEnv)
		note = "set " + h.TokenEnv + " to the hub's token in the environment " + c.title + " starts in"
	case h.TokenEnv == "" && h.Token != "" && c.id == "vscode":
		// VS Code asks for the token once and keeps it in its secret
		// storage: it never lands in the file.
		auth = "Bearer ${input:" + inputID + "}"
		e := c.build(h, auth)
		e.input = obj{{"type", "promptString"}, {"id", inputID}, {"description", "Token for the MCP hub"}, {"password", true}}
		e.note = "VS Code asks for the hub's token when it first starts the server"
		return e, nil
	case h.Token != "":
		auth = "Bearer " + h.Token
	case h.TokenEnv != "":
		return entry{}, fmt.Errorf("cannot read the token from $%s: give the token itself", h.TokenEnv)
	}
	e := c.build(h, auth)
	if note != "" {
		if e.note != "" {
			note += "; " + e.note
		}
		e.note = note
	}
	if h.OAuth && c.id == "gemini" {
		e.note = "sign in from Gemini CLI: /mcp auth " + h.Name
	}
	return e, nil
}

func codexEntry(h Hub, _ string) entry {
	t := "[mcp_servers." + h.Name + "]\nurl = " + tomlString(h.URL) + "\n"
	switch {
	case h.OAuth:
		return entry{toml: t, note: "sign in: codex mcp login " + h.Name}
	case h.TokenEnv != "":
		t += "bearer_token_env_var = " + tomlString(h.TokenEnv) + "\n"
	case h.Token != "":
		t += "http_headers = { Authorization = " + tomlString("Bearer "+h.Token) + " }\n"
	}
	return entry{toml: t}
}

// merge is before with the hub's entry in it (before empty: the snippet).
func (c spec) merge(before []byte, name string, e entry) (string, error) {
	if c.section == nil {
		return mergeTOML(before, name, e.toml)
	}
	if len(bytes.TrimSpace(before)) > 0 {
		t := jsonText{b: before}
		if _, err := t.root(); err != nil {
			return "", fmt.Errorf("not valid JSON: %w", err)
		}
		if !c.jsonc && !json.Valid(before) {
			return "", errors.New("not valid JSON: it has comments or trailing commas, which " + c.title + " does not read")
		}
	}
	doc := before
	var err error
	if e.input != nil {
		if doc, err = upsertElem(doc, "inputs", inputID, e.input); err != nil {
			return "", err
		}
	}
	if doc, err = setMember(doc, append(append([]string(nil), c.section...), name), e.value); err != nil {
		return "", err
	}
	if err := c.verify(before, doc, name, e); err != nil {
		return "", err
	}
	return string(doc), nil
}

// verify checks a merge against a decoder: the entry reads back as
// written, and nothing else in the file changed.
func (c spec) verify(before, after []byte, name string, e entry) error {
	was, is := map[string]any{}, map[string]any{}
	if len(bytes.TrimSpace(before)) > 0 {
		if err := json.Unmarshal(plain(before), &was); err != nil {
			return fmt.Errorf("not valid JSON: %w", err)
		}
	}
	if err := json.Unmarshal(plain(after), &is); err != nil {
		return fmt.Errorf("the merged file would not be valid JSON (%v): refusing", err)
	}
	got := cut(is, append(c.section, name))
	var want any
	_ = json.Unmarshal(encode(e.value, "", ""), &want)
	if !reflect.DeepEqual(got, want) {
		return errors.New("the merged entry does not read back as written: refusing")
	}
	cut(was, append(c.section, name))
	if e.input != nil {
		dropInput(was)
		dropInput(is)
	}
	if !reflect.DeepEqual(was, is) {
		return errors.New("merging would change more than the hub's entry: refusing")
	}
	return nil
}

// cut removes the value at path from m and returns it; parents left empty
// are removed too.
func cut(m map[string]any, path []string) any {
	if m == nil {
		return nil
	}
	if len(path) == 1 {
		v := m[path[0]]
		delete(m, path[0])
		return v
	}
	sub, _ := m[path[0]].(map[string]any)
	v := cut(sub, path[1:])
	if sub != nil && len(sub) == 0 {
		delete(m, path[0])
	}
	return v
}

func dropInput(m map[string]any) {
	list, ok := m["inputs"].([]any)
	if !ok {
		return
	}
	kept := list[:0]
	for _, in := range list {
		if o, ok := in.(map[string]any); ok && o["id"] == inputID {
			continue
		}
		kept = append(kept, in)
	}
	if len(kept) == 0 {
		delete(m, "inputs")
		return
	}
	m["inputs"] = kept
}

// had says before already has an entry under name.
func (c spec) had(before []byte, name string) (bool, error) {
	if len(bytes.TrimSpace(before)) == 0 {
		return false, nil
	}
	if c.section == nil {
		m, err := decodeTOML(before)
		if err != nil {
			return false, err
		}
		servers, _ := m["mcp_servers"].(map[string]any)
		_, ok := servers[name]
		return ok, nil
	}
	var m map[string]any
	if err := json.Unmarshal(plain(before), &m); err != nil {
		return false, fmt.Errorf("not valid JSON: %w", err)
	}
	return cut(m, append(c.section, name)) != nil, nil
}

package registryimport

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// Options shape the entries Plan makes: what the user adds to what the
// server.json says.
type Options struct {
	Name      string            // the one server's hub name, in place of the one made of its server.json name
	SecretRef string            // for servers whose Authorization header is required: the credential reference to register
	Vars      map[string]string // values of {variables} in remote URLs
}

// Result is what became of one server of the document: planned by Plan,
// then carried on by its caller (registered, connected...); the rows of
// the import's table and the items of its -o json.
type Result struct {
	Server    string `json:"server"`         // its server.json name
	Name      string `json:"name,omitempty"` // the hub's name for it
	URL       string `json:"url,omitempty"`  // as a message may show it
	Transport string `json:"transport,omitempty"`
	SecretRef string `json:"secretRef,omitempty"`
	// Status: StatusReady, StatusSkipped or StatusFailed from Plan; after
	// registering, the import's own (registered, then what the hub lists:
	// connected, connecting, error).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`

	// Entry is the registration to post when Status is StatusReady; never
	// printed (its URL holds what a message must not show).
	Entry registrations.Entry `json:"-"`
}

// Statuses Plan gives a Result.
const (
	// StatusReady: Entry is ready to register (printed as would-register
	// when the import only plans, --dry-run).
	StatusReady = "would-register"
	// StatusSkipped: nothing of the server the hub can connect, whatever
	// the flags (packages only, another transport, a header it cannot send).
	StatusSkipped = "skipped"
	// StatusFailed: a flag would do (--var, --secret-ref, --name); the
	// import's caller also fails a server the hub refused.
	StatusFailed = "failed"
)

// remoteSpec is a server.json remote: a transport the server runs at.
type remoteSpec struct {
	Type      string               `json:"type"`
	URL       string               `json:"url"`
	Headers   []inputSpec          `json:"headers"`
	Variables map[string]inputSpec `json:"variables"`
	// TransportType is the type's name before the 2025-09-29 schema,
	// read only to say so.
	TransportType string `json:"transport_type"`
}

// inputSpec is a server.json Input: what a client must (or may) supply;
// Name is a header's.
type inputSpec struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	IsRequired  bool     `json:"isRequired"`
	IsSecret    bool     `json:"isSecret"`
	Value       string   `json:"value"`
	Default     string   `json:"default"`
	Choices     []string `json:"choices"`
}

// packageSpec is a server.json package: something a client runs itself.
type packageSpec struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
}

// Plan turns each server.json into the entry to register, or says why it
// cannot become one; one Result per Doc, in order. A hub name is one
// server's: a later server the same name is made of fails, to be imported
// alone with --name.
func Plan(docs []Doc, o Options) []Result {
	results := make([]Result, 0, len(docs))
	taken := map[string]string{} // hub name -> server.json name
	for _, d := range docs {
		r := planServer(d, o)
		r.Name = cmp.Or(o.Name, hubName(d.Name))
		if r.Status == StatusReady {
			switch {
			case r.Name == "":
				r.Status, r.Reason = StatusFailed, "no hub name can be made of it; import it alone with --name"
			case taken[r.Name] != "":
				r.Status, r.Reason = StatusFailed, fmt.Sprintf("name %s is %s's in this import; import it alone with --name", r.Name, taken[r.Name])
			default:
				taken[r.Name] = d.Name
				r.Entry.Name = r.Name
			}
		}
		results = append(results, r)
	}
	return results
}

// planServer chooses the remote of one server: streamable-http first,
// then sse. A server none of whose remotes fits is skipped when the hub
// cannot connect it whatever the flags, failed when a flag would do.
func planServer(d Doc, o Options) Result {
	r := Result{Server: d.Name}
	if d.deleted {
		r.Status, r.Reason = StatusSkipped, "deleted in the registry"
		return r
	}
	if len(d.Remotes) == 0 {
		r.Status, r.Reason = StatusSkipped, packagesReason(d.Packages)
		return r
	}
	var skips, fails reasons
	for _, want := range []string{"streamable-http", "sse"} {
		for i, raw := range d.Remotes {
			var rs remoteSpec
			_ = json.Unmarshal(raw, &rs) // checked by parseServer
			if rs.Type != want {
				continue
			}
			e, missing, why := planRemote(rs, o)
			switch {
			case missing != "":
				fails.add(i, missing)
			case why != "":
				skips.add(i, why)
			default:
				r.Entry, r.URL, r.Transport, r.SecretRef = e, secrets.URLForMessage(e.URL), want, e.SecretRef
				r.Status = StatusReady
				return r
			}
		}
	}
	for i, raw := range d.Remotes {
		var rs remoteSpec
		_ = json.Unmarshal(raw, &rs)
		switch {
		case rs.Type == "" && rs.TransportType != "":
			skips.add(i, "transport_type is the server.json of before the 2025-09-29 schema; this reads type (streamable-http, sse)")
		case rs.Type != "streamable-http" && rs.Type != "sse":
			skips.add(i, fmt.Sprintf("type %q: the hub connects streamable-http and sse remotes", rs.Type))
		}
	}
	if len(fails) > 0 {
		r.Status, r.Reason = StatusFailed, fails.String()
	} else {
		r.Status, r.Reason = StatusSkipped, skips.String()
	}
	return r
}

// reasons are why remotes were not chosen, each once with every remote it
// applies to: "remotes[1], remotes[0]: its Authorization header ...".
type reasons []struct {
	msg     string
	remotes []string
}

func (rs *reasons) add(i int, msg string) {
	at := fmt.Sprintf("remotes[%d]", i)
	for j := range *rs {
		if (*rs)[j].msg == msg {
			(*rs)[j].remotes = append((*rs)[j].remotes, at)
			return
		}
	}
	*rs = append(*rs, struct {
		msg     string
		remotes []string
	}{msg, []string{at}})
}

func (rs reasons) String() string {
	var out []string
	for _, r := range rs {
		out = append(out, strings.Join(r.remotes, ", ")+": "+r.msg)
	}
	return strings.Join(out, "; ")
}

// urlVariable is a {name} of a remote's URL template.
var urlVariable = regexp.MustCompile(`\{([^{}]+)\}`)

// planRemote makes the entry of one remote. missing says which flag the
// remote needs; why, why the hub cannot connect it at all.
func planRemote(rs remoteSpec, o Options) (e registrations.Entry, missing, why string) {
	var need []string
	template := rs.URL
	for _, m := range urlVariable.FindAllStringSubmatch(rs.URL, -1) {
		k := m[1]
		v, given := o.Vars[k]
		in := rs.Variables[k]
		switch {
		case in.IsSecret:
			return e, "", fmt.Sprintf("URL variable {%s} is a secret, and the hub keeps a registered URL in plain text", k)
		case !given && in.Default == "":
			if in.Description != "" {
				k += " (" + in.Description + ")"
			}
			need = append(need, "--var "+k)
			continue
		case !given:
			v = in.Default
		}
		if len(in.Choices) > 0 && !slices.Contains(in.Choices, v) {
			return e, fmt.Sprintf("URL variable {%s}: %q is not one of %s", k, v, strings.Join(in.Choices, ", ")), ""
		}
		rs.URL = strings.ReplaceAll(rs.URL, m[0], v)
	}
	if len(need) > 0 {
		return e, fmt.Sprintf("its URL %s needs %s", template, strings.Join(need, ", ")), ""
	}
	// The hub takes a URL whose path ends in /sse as SSE and any other as
	// streamable HTTP (registrations carry no transport).
	if u, err := url.Parse(rs.URL); err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse") != (rs.Type == "sse") {
		return e, "", fmt.Sprintf("%s remote at %s: the hub takes a URL whose path ends in /sse as SSE and any other as streamable HTTP", rs.Type, secrets.URLForMessage(rs.URL))
	}
	e.URL = rs.URL
	bearerRequired := false
	for _, h := range rs.Headers {
		if !strings.EqualFold(h.Name, "Authorization") {
			if h.IsRequired || h.Value != "" {
				return e, "", fmt.Sprintf("header %s: the hub sends an upstream no header but Authorization: Bearer (from --secret-ref)", h.Name)
			}
			continue // optional, and not sent
		}
		if h.Value != "" && !strings.HasPrefix(strings.ToLower(h.Value), "bearer ") {
			return e, "", "header Authorization: not a bearer token, the one kind the hub sends"
		}
		bearerRequired = bearerRequired || h.IsRequired
		if o.SecretRef != "" {
			e.Auth, e.SecretRef = "bearer", o.SecretRef
		}
	}
	if bearerRequired && o.SecretRef == "" {
		return e, "its Authorization header is required: give --secret-ref, a labelled Secret (Kubernetes) or a variable of registrations.credentialRefs (laptop) holding the token", ""
	}
	return e, "", ""
}

// packagesReason says why a server that lists only packages is skipped,
// naming them. An oci package could be deployed on Kubernetes, but a
// package's arguments and environment (often required secrets) have no
// place in a registration, so the import prints the command to run instead
// of running someone's image unasked.
func packagesReason(pkgs []json.RawMessage) string {
	if len(pkgs) == 0 {
		return "no remotes and no packages: nothing to connect"
	}
	var names, hints []string
	for _, raw := range pkgs {
		var p packageSpec
		_ = json.Unmarshal(raw, &p) // checked by parseServer
		ref := strings.TrimSpace(p.Identifier + " " + p.Version)
		names = append(names, p.RegistryType+" "+ref)
		if p.RegistryType == "oci" {
			img := p.Identifier
			if p.Version != "" && !strings.Contains(img, "@") && !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") {
				img += ":" + p.Version
			}
			hints = append(hints, "on Kubernetes: mcp-hub servers add NAME --image "+img+" --port PORT")
		}
	}
	msg := "packages run on the client, the hub connects remotes: " + strings.Join(names, ", ")
	if len(hints) > 0 {
		msg += " (" + strings.Join(hints, "; ") + ")"
	}
	return msg
}

// hubName is the hub's name for a server.json name: its part after the
// slash (io.github.acme/weather -> weather), lower-case, every other
// character than a-z 0-9 - turned into -, at most 63, as a DNS label
// (the name of a Kubernetes object) must be.
func hubName(serverName string) string {
	s := strings.ToLower(serverName[strings.LastIndex(serverName, "/")+1:])
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	s = b.String()
	return strings.TrimRight(s[:min(len(s), 63)], "-")
}

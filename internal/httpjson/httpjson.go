// Package httpjson writes the JSON replies of the hub's HTTP APIs (the
// REST face, the admin API, the console's feed) one way: indented for the
// people who read them with curl, and never sniffed as another type.
package httpjson

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Write answers with status and v as JSON.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ErrorText is the message of an error answer an HTTP API wrote: its
// {"error": "..."} (the hub's own, Write's) or {"error": {"message": ...}}
// (a JSON-RPC-shaped one, as some registries answer), else the body as it
// is. The hub's CLI reads the hub's refusals with it, the registry import
// a registry's.
func ErrorText(b []byte) string {
	var e struct {
		Error any `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		switch v := e.Error.(type) {
		case string:
			msg = v
		case map[string]any:
			msg = fmt.Sprint(v["message"])
		}
	}
	return msg
}

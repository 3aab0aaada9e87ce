// Package httpjson writes the JSON replies of the hub's HTTP APIs (the
// REST face, the admin API, the console's feed) one way: indented for the
// people who read them with curl, and never sniffed as another type.
package httpjson

import (
	"encoding/json"
	"net/http"
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

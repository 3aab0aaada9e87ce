package adminapi

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes the hub's REST API (OpenAPI 3), served at
// /api/openapi.json so clients can be generated and requests checked;
// internal/server's openapi_test.go keeps it valid and in step with the
// routes the hub mounts.
//
//go:embed openapi.json
var openAPIDocument []byte

func handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDocument)
}

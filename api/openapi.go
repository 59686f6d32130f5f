package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3 document of razao's whole HTTP API. A test
// checks it against the router's real routes so the two cannot drift.
//
//go:embed openapi.json
var OpenAPI []byte

// OpenAPIHandler serves the document at /openapi.json.
func OpenAPIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(OpenAPI)
	})
}

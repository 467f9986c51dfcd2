// Package docs holds what of Baton's documentation the binary carries: the
// OpenAPI document, served at GET /v1/openapi.json and checked against every
// answer of the HTTP tests.
package docs

import _ "embed"

// OpenAPIYAML is openapi.yaml, the OpenAPI 3.1 description of the HTTP API.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

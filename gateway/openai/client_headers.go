package openai

import (
	"net/http"
	"net/textproto"
	"slices"
	"strings"
)

// A client's own headers that go to OpenAI with a passed-through body, as
// anthropic-version and anthropic-beta go to Anthropic: what Codex sends
// to say who it is and which session and turn a request belongs to
// (testdata/clients/codex-exec*.json), and OpenAI-Beta. Never a
// credential, a cookie or a hop-by-hop header; never OpenAI-Organization
// or OpenAI-Project, which belong to the provider's key. docs/api.md,
// Responses.

// clientHeaders are the names taken as they are (lower case).
var clientHeaders = []string{
	"openai-beta",
	"originator", "version",
	"session_id", "session-id", "thread-id", "conversation_id", "x-client-request-id",
	"x-openai-internal-codex-responses-lite",
}

// codexPrefix names Codex's own headers (x-codex-turn-metadata,
// x-codex-window-id, x-codex-beta-features, ...), taken unless their name
// says they carry a secret.
const codexPrefix = "x-codex-"

// ClientHeader reports whether a client's header goes to OpenAI with a
// passed-through body.
func ClientHeader(name string) bool {
	if len(name) > len(codexPrefix) && strings.EqualFold(name[:len(codexPrefix)], codexPrefix) {
		low := strings.ToLower(name)
		return !slices.ContainsFunc([]string{"auth", "key", "token", "secret", "cookie", "password", "credential"}, func(s string) bool { return strings.Contains(low, s) })
	}
	// A received header's name is already canonical: one lookup, and no
	// allocation, for each header a request brings.
	return clientHeaderSet[textproto.CanonicalMIMEHeaderKey(name)]
}

// clientHeaderSet holds clientHeaders in canonical form.
var clientHeaderSet = func() map[string]bool {
	m := map[string]bool{}
	for _, h := range clientHeaders {
		m[textproto.CanonicalMIMEHeaderKey(h)] = true
	}
	return m
}()

// withClientHeaders adds the client's headers of a passed-through body to
// an upstream request to OpenAI itself (not to a compatible server, which
// is someone else's). Baton's own headers (the key, the content type) are
// already set and are not replaced.
func (p *Provider) withClientHeaders(req *http.Request, client http.Header) {
	if p.kind != "openai" {
		return
	}
	for name, vs := range client {
		if !ClientHeader(name) || req.Header.Get(name) != "" {
			continue
		}
		for _, v := range vs {
			req.Header.Add(name, v)
		}
	}
}

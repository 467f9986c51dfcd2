package http

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
)

// queryParams are the query parameters each of Baton's own endpoints
// takes, by method and path template; an endpoint not named takes none.
// Another is refused (knownQuery): ignored, a misspelt filter
// (?tenants=acme) answered a wider list than asked for, as if it were the
// one asked for, and ?dryRun=1 on a command did the command.
var queryParams = map[string][]string{
	"GET /v1/handoff/contracts":               {"state", "approvalStatus", "targetExecutor", "limit", "cursor"},
	"GET /v1/executions/{handoffId}/ledger":   {"after", "wait"},
	"GET /v1/events":                          {"handoffId", "targetExecutor", "type", "after"},
	"GET /v1/admin/keys":                      {"tenant"},
	"GET /v1/webhooks":                        {"limit", "cursor"},
	"GET /v1/webhooks/{webhookId}/deliveries": {"limit", "cursor"},
}

// knownQuery refuses, with 422 naming each, the query parameters the
// endpoint r was routed to does not take. Only Baton's own endpoints (those
// answering problem documents) are held to it: the model fronts ignore
// what they do not know, as the providers do, since SDKs add parameters of
// their own.
func knownQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	tpl := r.URL.Path // the model fronts' fixed POST paths, served outside the router
	if rt := mux.CurrentRoute(r); rt != nil {
		if t, err := rt.GetPathTemplate(); err == nil {
			tpl = t
		}
	}
	if !strings.HasPrefix(tpl, "/v1/") || strings.HasPrefix(tpl, "/v1/log/") {
		return nil // /metrics is a scraper's, the log's routes C2SP's (fetched as static files)
	}
	bad := queryFaults(r.URL.RawQuery, r.URL.Query(), queryParams[r.Method+" "+tpl])
	if len(bad) == 0 {
		return nil
	}
	slices.SortFunc(bad, func(a, b domain.FieldError) int { return strings.Compare(a.Pointer, b.Pointer) })
	return domain.Invalid("query", bad...)
}

// queryFaults names what is wrong with a query string for an endpoint that
// takes the parameters takes: the pairs Go's parser drops (in their order),
// then the parameters it does not take (by name).
func queryFaults(raw string, q url.Values, takes []string) []domain.FieldError {
	var bad []domain.FieldError
	for _, name := range unreadablePairs(raw) {
		bad = append(bad, domain.FieldError{Pointer: "query:" + name, Code: "malformed",
			Message: "does not parse: separate parameters with '&', not ';', and write '%' as %25"})
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if slices.Contains(takes, name) {
			continue
		}
		msg := "is not a parameter of this endpoint, which takes none"
		if len(takes) > 0 {
			msg = "is not a parameter of this endpoint, which takes " + strings.Join(takes, ", ")
		}
		bad = append(bad, domain.FieldError{Pointer: "query:" + name, Code: "unknown_parameter", Message: msg})
	}
	return bad
}

// unreadablePairs names the pairs of a raw query string that Go's parser
// cannot read, which r.URL.Query() drops without a word: ?tenant=acme;x=1
// was read as no filter at all.
func unreadablePairs(raw string) []string {
	var names []string
	for _, pair := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(pair, "=")
		name, kerr := url.QueryUnescape(k)
		if kerr != nil {
			name = k
		}
		if _, verr := url.QueryUnescape(v); kerr != nil || verr != nil || strings.Contains(pair, ";") {
			names = append(names, name)
		}
	}
	return names
}

package http

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/projections"
)

// Every kind has a row in the one error table.
func TestErrorTableHasEveryKind(t *testing.T) {
	for k := domain.KindOther + 1; k <= domain.KindNoUpgrade; k++ {
		if _, ok := errorTable[k]; !ok {
			t.Errorf("kind %v (%d) has no row in errorTable", k, k)
		}
	}
	if got := statusOf(domain.KindOther); got != 500 {
		t.Errorf("an unclassified kind answers %d, want 500", got)
	}
}

// The whole mapping: what each error becomes as a problem and on the two
// gateway fronts.
func TestErrorMapping(t *testing.T) {
	budget := func(b gateway.BudgetError) error { return &b }
	tests := []struct {
		name                string
		err                 error
		problem, wire       int
		code, openai, anthr string
		param               string
		retryAfter          int
	}{
		{"invalid", domain.Invalid("x", domain.FieldError{Pointer: "/a", Code: "c", Message: "m"}), 422, 400, "validation_failed", "invalid_request_error", "invalid_request_error", "/a", 0},
		{"malformed", malformed("not JSON"), 400, 400, "malformed_json", "invalid_request_error", "invalid_request_error", "", 0},
		{"too large", tooLarge(10), 413, 413, "body_too_large", "invalid_request_error", "request_too_large", "", 0},
		{"unauthorized", domain.E("auth", domain.KindUnauthorized, "missing_api_key", "m"), 401, 401, "missing_api_key", "invalid_request_error", "authentication_error", "", 0},
		{"forbidden", domain.E("auth", domain.KindForbidden, "admin_key_required", "m"), 403, 403, "admin_key_required", "invalid_request_error", "permission_error", "", 0},
		{"not found", domain.E("h", domain.KindNotFound, "handoff_not_found", "m"), 404, 404, "handoff_not_found", "invalid_request_error", "not_found_error", "", 0},
		{"not allowed", domain.E("route", domain.KindNotAllowed, "method_not_allowed", "m"), 405, 405, "method_not_allowed", "invalid_request_error", "invalid_request_error", "", 0},
		{"no upgrade", domain.E("route", domain.KindNoUpgrade, "websocket_not_supported", "m"), 426, 426, "websocket_not_supported", "invalid_request_error", "invalid_request_error", "", 0},
		{"conflict", domain.E("h", domain.KindConflict, "approval_pending", "m"), 409, 409, "approval_pending", "api_error", "api_error", "", 0},
		{"in flight", keyInFlightForTest(), 409, 409, "idempotency_in_flight", "api_error", "api_error", "", 1},
		{"unavailable", domain.E("h", domain.KindUnavailable, "busy", "m"), 503, 503, "busy", "api_error", "api_error", "", 0},
		{"internal", domain.E("h", domain.KindInternal, "handoff_quarantined", "m"), 500, 500, "handoff_quarantined", "api_error", "api_error", "", 0},
		{"unclassified domain error", domain.E("h", domain.KindOther, "odd", "m"), 500, 500, "odd", "api_error", "api_error", "", 0},
		{"unpriced model under a budget", budget(gateway.BudgetError{Tenant: "t"}), 403, 403, "unpriced_model_under_budget", "invalid_request_error", "permission_error", "model", 0},
		{"unpriced tier under a budget", budget(gateway.BudgetError{Tenant: "t", Tier: "priority"}), 403, 403, "unpriced_service_tier_under_budget", "invalid_request_error", "permission_error", "service_tier", 0},
		{"budget never enough", budget(gateway.BudgetError{Tenant: "t", Period: "day", Never: true}), 400, 400, "budget_too_small_for_request", "invalid_request_error", "invalid_request_error", "max_tokens", 0},
		{"budget spent", budget(gateway.BudgetError{Tenant: "t", Period: "day", ResetAt: time.Now().Add(90 * time.Second)}), 429, 429, "budget_exceeded", "insufficient_quota", "rate_limit_error", "", 90},
		{"budget too small for any call, month spent", budget(gateway.BudgetError{Tenant: "t", Period: "day", Never: true, Quota: true, ResetAt: time.Now().Add(90 * time.Second),
			Also: &gateway.BudgetError{Period: "month", ResetAt: time.Now().Add(time.Hour)}}), 429, 429, "budget_exceeded", "insufficient_quota", "rate_limit_error", "", 3600},
		{"budget held", budget(gateway.BudgetError{Tenant: "t", Period: "day", HeldOnly: true, ResetAt: time.Now().Add(time.Hour)}), 429, 429, "budget_exceeded", "insufficient_quota", "rate_limit_error", "", 1},
		{"no route", fmt.Errorf("%w: mode cheap", gateway.ErrNoRoute), 503, 503, "no_route", "api_error", "overloaded_error", "model", 0},
		{"unknown model", fmt.Errorf("%w: x", gateway.ErrUnknownModel), 404, 404, "model_not_found", "invalid_request_error", "not_found_error", "model", 0},
		{"upstream timeout", &gateway.UpstreamError{Provider: "p", Timeout: true}, 504, 504, "upstream_timeout", "api_error", "api_error", "", 0},
		{"upstream 429", &gateway.UpstreamError{Provider: "p", Status: 429, RetryAfter: "7"}, 429, 429, "upstream_rate_limited", "rate_limit_error", "rate_limit_error", "", 7},
		{"upstream 529", &gateway.UpstreamError{Provider: "p", Status: 529}, 503, 503, "upstream_overloaded", "api_error", "overloaded_error", "", 0},
		{"upstream 503", &gateway.UpstreamError{Provider: "p", Status: 503}, 503, 503, "upstream_overloaded", "api_error", "overloaded_error", "", 0},
		{"upstream 400", &gateway.UpstreamError{Provider: "p", Status: 400}, 400, 400, "upstream_rejected_request", "invalid_request_error", "invalid_request_error", "", 0},
		{"upstream 404", &gateway.UpstreamError{Provider: "p", Status: 404, OfAPI: true}, 400, 400, "upstream_rejected_request", "invalid_request_error", "invalid_request_error", "", 0},
		// A 404 page of no provider's API: its baseUrl is wrong, the
		// operator's to mend.
		{"upstream 404 page", &gateway.UpstreamError{Provider: "p", Status: 404}, 502, 502, "upstream_error", "api_error", "api_error", "", 0},
		// A body too large for the provider (Anthropic's request_too_large)
		// is the caller's to shorten: no 5xx the SDKs retry, no wait.
		{"upstream 413", &gateway.UpstreamError{Provider: "p", Status: 413, RetryAfter: "5"}, 413, 413, "upstream_request_too_large", "invalid_request_error", "request_too_large", "", 0},
		{"upstream 500", &gateway.UpstreamError{Provider: "p", Status: 500}, 502, 502, "upstream_error", "api_error", "api_error", "", 0},
		{"upstream 401", &gateway.UpstreamError{Provider: "p", Status: 401}, 502, 502, "upstream_error", "api_error", "api_error", "", 0},
		{"upstream 403", &gateway.UpstreamError{Provider: "p", Status: 403}, 502, 502, "upstream_error", "api_error", "api_error", "", 0},
		{"upstream connection", &gateway.UpstreamError{Provider: "p"}, 502, 502, "upstream_error", "api_error", "api_error", "", 0},
		{"store unavailable", fmt.Errorf("append: %w", eventstore.ErrUnavailable), 503, 503, "store_unavailable", "api_error", "api_error", "", 1},
		{"store failed", eventstore.ErrFailed, 503, 503, "store_unavailable", "api_error", "api_error", "", 0},
		{"store closed", eventstore.ErrClosed, 503, 503, "store_unavailable", "api_error", "api_error", "", 0},
		{"read models behind", projections.ErrBehind, 503, 503, "store_unavailable", "api_error", "api_error", "", 0},
		{"client gone", context.Canceled, 499, 499, "client_closed_request", "api_error", "api_error", "", 0},
		{"anything else", errors.New("boom"), 500, 500, "internal_error", "api_error", "api_error", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/x", nil)
			d := describe(r, tt.err)
			oa, an := d.types()
			if got := statusOf(d.Kind); got != tt.problem {
				t.Errorf("problem status %d, want %d", got, tt.problem)
			}
			if got := d.wireStatus(); got != tt.wire {
				t.Errorf("wire status %d, want %d", got, tt.wire)
			}
			// Anthropic's clients know its overload by its 529.
			want := tt.wire
			if tt.code == "upstream_overloaded" || tt.code == "overloaded" {
				want = 529
			}
			if got := d.statusIn(anthropicErrors); got != want {
				t.Errorf("status on the messages front %d, want %d", got, want)
			}
			if got := d.statusIn(openaiErrors); got != tt.wire {
				t.Errorf("status on the OpenAI fronts %d, want %d", got, tt.wire)
			}
			if d.Code != tt.code || oa != tt.openai || an != tt.anthr || d.param != tt.param {
				t.Errorf("code %q types %q/%q param %q, want %q %q/%q %q", d.Code, oa, an, d.param, tt.code, tt.openai, tt.anthr, tt.param)
			}
			if d.RetryAfter != tt.retryAfter {
				t.Errorf("Retry-After %d, want %d", d.RetryAfter, tt.retryAfter)
			}
			// A provider refusing Baton's key refuses every retry: the SDKs
			// are told not to run the call again; other 5xx may pass.
			if ue, ok := tt.err.(*gateway.UpstreamError); ok && d.NoRetry != (ue.Status == 401 || ue.Status == 403) {
				t.Errorf("NoRetry %v for an upstream %d", d.NoRetry, ue.Status)
			}
			if tt.code == "no_route" && !d.NoRetry {
				t.Errorf("no_route without NoRetry: no retry finds a route the operator has not added")
			}
			if tt.code == "internal_error" && d.Message != "The server failed on this request; it has been logged." {
				t.Errorf("an internal error shows its text: %q", d.Message)
			}
		})
	}
}

func keyInFlightForTest() error {
	e := domain.E("idempotency", domain.KindConflict, "idempotency_in_flight", "m")
	e.RetryAfter = 1
	return e
}

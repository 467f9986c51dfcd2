package http

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// A decision the server could not answer (503) says whether it was
// recorded and leads back to the handoff, whose page shows it if it was.
func TestUnavailableActionForPerson(t *testing.T) {
	for code, recorded := range map[string]string{"busy": "Your decision was not recorded.", "store_unavailable": "Your decision may or may not have been recorded."} {
		p := Problem{Status: 503, Code: code, Title: "Service Unavailable", Detail: "retry with the same Idempotency-Key"}
		again := unavailableForPerson(&p, httptest.NewRequest("POST", "/console/handoffs/h-1/actions", nil))
		if again.URL != "/console/handoffs/h-1" || !strings.Contains(p.Detail, recorded) || strings.Contains(p.Detail, "Idempotency") || p.Code != code {
			t.Fatalf("%s: %+v %+v", code, again, p)
		}
	}
	p := Problem{Status: 503, Code: "store_unavailable"}
	if unavailableForPerson(&p, httptest.NewRequest("POST", "/console/signin", nil)); !strings.Contains(p.Detail, "Open your sign-in link again in a moment") {
		t.Fatalf("sign-in: %+v", p)
	}
}

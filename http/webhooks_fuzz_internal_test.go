package http

import (
	"errors"
	"net/url"
	"testing"

	"github.com/batonhq/baton/domain"
)

// FuzzWebhookRequest feeds arbitrary bodies to the registration decoder:
// it never panics, refuses with a 400 or a 422 naming fields, and what it
// accepts is an absolute http(s) URL with at least one event type, valid
// again when checked again.
func FuzzWebhookRequest(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://hooks.example.com/baton","eventTypes":["ContractCreated"],"targetExecutors":["ops-bot"]}`,
		`{"url":"http://127.0.0.1:9/x","eventTypes":["*"]}`,
		`{"url":"https://[::ffff:10.0.0.1]/","eventTypes":["ApprovalExpired","ApprovalExpired"]}`,
		`{"url":"https://user:pw@h/","eventTypes":[]}`,
		`{"url":"//h/x","eventTypes":"x"}`,
		`{"url":null,"eventTypes":null,"targetExecutors":[""]}`,
		`[]`, `{`, ``, `{"URL":"https://h/","EVENTTYPES":["A"]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, allowPrivate bool) {
		reg, err := decodeWebhookRequest(body, allowPrivate)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || (de.Kind != domain.KindInvalid && de.Kind != domain.KindBadRequest) {
				t.Fatalf("%q: %v is neither a 400 nor a 422", body, err)
			}
			if de.Kind == domain.KindInvalid && de.Code == "validation_failed" && len(de.Fields) == 0 {
				t.Fatalf("%q: a 422 naming no field", body)
			}
			return
		}
		u, perr := url.Parse(reg.URL)
		if perr != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(reg.EventTypes) == 0 {
			t.Fatalf("%q accepted as %+v", body, reg)
		}
		again := reg
		if err := again.Validate(allowPrivate); err != nil {
			t.Fatalf("%q: accepted, then refused when checked again: %v", body, err)
		}
	})
}

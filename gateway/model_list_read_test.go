package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/openai"
)

// A model sync reads only the list's data and, for Anthropic's paging,
// has_more and last_id: a field it does not use (OpenAI's object,
// Anthropic's first_id) is not refused for its type, as the adapters read
// the lists before their shapes were shared with the models front.
func TestModelSyncIgnoresFieldsItDoesNotUse(t *testing.T) {
	pages := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("after_id")
		if r.Header.Get("anthropic-version") == "" {
			key = "openai"
		}
		io.WriteString(w, pages[key])
	}))
	t.Cleanup(srv.Close)
	an := anthropic.New("anthropic", srv.URL, "k", srv.Client())
	for _, first := range []string{`"a"`, `null`, `7`, `{"x":1}`, `true`} {
		pages[""] = `{"data":[{"id":"a"}],"first_id":` + first + `,"has_more":true,"last_id":"a"}`
		pages["a"] = `{"data":[{"id":"b"}],"first_id":"b","has_more":false,"last_id":"b"}`
		got, err := an.ListModels(context.Background())
		if err != nil || !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("Anthropic, first_id %s: %q, %v", first, got, err)
		}
	}
	oa := openai.New("openai", "openai-compatible", srv.URL, "k", srv.Client())
	for _, object := range []string{`"list"`, `null`, `5`, `{"a":1}`, `["list"]`} {
		pages["openai"] = `{"object":` + object + `,"data":[{"id":"x"}]}`
		got, err := oa.ListModels(context.Background())
		if err != nil || !slices.Equal(got, []string{"x"}) {
			t.Errorf("OpenAI, object %s: %q, %v", object, got, err)
		}
	}
}

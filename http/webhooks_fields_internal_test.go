package http

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/batonhq/baton/docs"
	"github.com/batonhq/baton/domain"
)

// The refusal of an unknown field in a webhook registration names the
// fields the registration has, as docs/openapi.yaml's
// CreateWebhookRequest lists them: the message is made from the request
// type, so a field added to one is named by the other.
func TestWebhookRegistrationUnknownFieldNamesTheFields(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(docs.OpenAPIYAML, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for name := range doc.Components.Schemas["CreateWebhookRequest"].Properties {
		documented = append(documented, name)
	}
	slices.Sort(documented)
	if got := slices.Sorted(slices.Values(webhookFields)); !slices.Equal(got, documented) {
		t.Fatalf("a registration decodes %v; the document lists %v", got, documented)
	}
	_, err := decodeWebhookRequest([]byte(`{"url":"https://hooks.example.com/x","eventTypes":["*"],"targetExecutor":["ops-bot"]}`), false)
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Code != "unknown_field" {
		t.Fatalf("a misspelt filter: %v", err)
	}
	msg := de.Fields[0].Message
	for _, name := range documented {
		if !strings.Contains(msg, name+",") && !strings.Contains(msg, name+";") {
			t.Fatalf("the refusal %q does not name %s", msg, name)
		}
	}
}

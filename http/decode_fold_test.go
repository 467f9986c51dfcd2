package http

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/openai"
)

// A key that differs from a field only in case is an unknown field, as the
// wire formats name their fields exactly: encoding/json alone would read
// "Model" as model.
func TestDecodeIgnoresCaseFoldedKeys(t *testing.T) {
	var q openai.ChatRequest
	if err := decodeBody([]byte(`{"Model":"a","model":"b","MESSAGES":[{"role":"user","content":"x"}],"ſtream":true,"seed":3,"SEED":4}`), &q); err != nil {
		t.Fatal(err)
	}
	if q.Model != "b" || len(q.Messages) != 0 || q.Stream || q.Seed == nil || *q.Seed != 3 {
		b, _ := json.Marshal(q)
		t.Fatalf("decoded %s", b)
	}
	// Exact keys decode as before; a body that is not JSON is still
	// refused at its offset.
	if err := decodeBody([]byte(`{"model":"m","Model":`), &q); err == nil {
		t.Fatal("a cut body was taken")
	}
}

func TestDecodeIgnoresNestedCaseFoldedKeys(t *testing.T) {
	var q anthropic.MessagesRequest
	if err := decodeBody([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"ROLE":"x","role":"assistant","Content":"b"}]}`), &q); err != nil {
		t.Fatal(err)
	}
	if len(q.Messages) != 2 || q.Messages[1].Role != "assistant" || len(q.Messages[1].Content) != 0 || string(q.Messages[0].Content) != `"a"` {
		b, _ := json.Marshal(q)
		t.Fatalf("decoded %s", b)
	}
}

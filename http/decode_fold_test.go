package http

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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

// Many such keys cost one copy of the body: deleting them one by one
// copied the body for each, minutes for a body of a few MiB.
func TestDecodeManyFoldedKeysInLinearTime(t *testing.T) {
	body := `{"model":"m","max_tokens":1,"messages":[` + strings.Repeat(`{"Role":"x","role":"user","CONTENT":"y","content":"a"},`, 20000) + `{"role":"user","content":"b"}]}`
	done := make(chan error, 1)
	var q anthropic.MessagesRequest
	go func() { done <- decodeBody([]byte(body), &q) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("decoding a body of 20,000 case-folded keys took more than 30 s")
	}
	if len(q.Messages) != 20001 || q.Messages[0].Role != "user" || string(q.Messages[0].Content) != `"a"` || string(q.Messages[20000].Content) != `"b"` {
		t.Fatalf("decoded %d messages, the first %+v", len(q.Messages), q.Messages[0])
	}
}

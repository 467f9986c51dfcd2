package openai

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

func TestPassedThroughRecord(t *testing.T) {
	const id = "resp_68af0c4e5a2c8190b1c5e0c9d1a3f4e70a6b2c9d8e7f6a5b"
	answer := func(id, status, store string) []byte {
		return []byte(`{"id":"` + id + `","object":"response","status":"` + status + `","store":` + store + `,"output":[]}`)
	}
	tests := []struct {
		name         string
		body, answer []byte
		ok, upstream bool
	}{
		{"kept", []byte(`{"input":"hi"}`), answer(id, "completed", "true"), true, true},
		{"incomplete", []byte(`{"input":"hi","store":true}`), answer(id, "incomplete", "true"), true, true},
		{"not kept by OpenAI", []byte(`{"input":"hi"}`), answer(id, "completed", "false"), true, false},
		{"store false", []byte(`{"input":"hi","store":false}`), answer(id, "completed", "false"), false, false},
		{"failed", []byte(`{"input":"hi"}`), answer(id, "failed", "true"), false, false},
		{"an id Baton cannot name", []byte(`{"input":"hi"}`), answer("resp_a-b", "completed", "true"), false, false},
		{"not a response", []byte(`{"input":"hi"}`), []byte(`{"id":"` + id + `","object":"chat.completion"}`), false, false},
		{"continuing itself", []byte(`{"input":"hi","previous_response_id":"` + id + `"}`), answer(id, "completed", "true"), false, false},
	}
	for _, tc := range tests {
		rec, ok := PassedThrough("oai", "oai:gpt-x", tc.body, tc.answer)
		if ok != tc.ok || ok && (rec.UpstreamStored != tc.upstream || rec.Upstream != "oai" || rec.ID != id || rec.Model != "oai:gpt-x") {
			t.Errorf("%s: %v %+v", tc.name, ok, rec)
		}
		if ok && (len(rec.Input) != 1 || gjson.GetBytes(rec.Input[0], "role").Str != "user" || gjson.GetBytes(rec.Input[0], "content.0.text").Str != "hi") {
			t.Errorf("%s: input %s", tc.name, rec.Input)
		}
	}
}

// FuzzPassedThrough reads a client's body and an upstream's answer, both
// untrusted: it must not panic, and what it keeps must be a response
// Baton can name, as answered.
func FuzzPassedThrough(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-x","input":"hi","previous_response_id":"resp_a"}`), []byte(`{"id":"resp_b","object":"response","status":"completed","output":[]}`))
	f.Add([]byte(`{"store":false,"input":[{"role":"user","content":"hi"}]}`), []byte(`{"id":"resp_b","object":"response","status":"completed"}`))
	f.Add([]byte(`{"input":[{"type":"reasoning"}]}`), []byte(`{"id":"resp_b","object":"response","status":"incomplete","store":false}`))
	f.Add([]byte(`not json`), []byte(`{"id":"resp_-x","object":"response","status":"completed"}`))
	f.Fuzz(func(t *testing.T, body, answer []byte) {
		rec, ok := PassedThrough("oai", "oai:gpt-x", body, answer)
		if !ok {
			return
		}
		if !responseIDRE.MatchString(rec.ID) || rec.ID == rec.Previous || !bytes.Equal(rec.Response, answer) || rec.Upstream != "oai" {
			t.Fatalf("kept %+v from body %q answer %q", rec, body, answer)
		}
	})
}

// FuzzInputItems: whatever items a record holds (a client's input, kept as
// sent), the listing never panics, and each item it lists is JSON with an
// id and a type.
func FuzzInputItems(f *testing.F) {
	for _, seed := range []string{
		`{"role":"user","content":"hi"}`, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}],"id":"msg_1"}`,
		`{"type":"function_call_output","call_id":"c","output":"r"}`, `{"id":7,"role":"user","content":null}`, `[1]`, `"s"`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // a record holds items that were JSON
		}
		for _, it := range InputItems(&ResponsesRecord{ID: "resp_1", Input: []json.RawMessage{raw, raw}}) {
			if !json.Valid(it) || gjson.GetBytes(it, "id").Str == "" {
				t.Fatalf("%s listed as %s", raw, it)
			}
		}
	})
}

// A reference sent without its type (absent or null, as OpenAI's SDKs
// allow), as a passed-through request keeps it, is listed as the
// item_reference it is.
func TestInputItemsReferenceWithoutType(t *testing.T) {
	rec := &ResponsesRecord{ID: "resp_1", Input: []json.RawMessage{
		json.RawMessage(`{"id":"msg_a"}`), json.RawMessage(`{"id":"msg_b","type":null}`), json.RawMessage(`{"id":"msg_c","type":null,"role":null}`),
		json.RawMessage(`{"type":"item_reference","id":"msg_d"}`), json.RawMessage(`{"role":"user","content":"hi"}`),
	}}
	want := []string{"item_reference msg_a", "item_reference msg_b", "item_reference msg_c", "item_reference msg_d", "message msg_1_in4"}
	for i, it := range InputItems(rec) {
		if got := gjson.GetBytes(it, "type").Str + " " + gjson.GetBytes(it, "id").Str; got != want[i] {
			t.Errorf("item %d listed as %s, want %s", i, it, want[i])
		}
	}
}

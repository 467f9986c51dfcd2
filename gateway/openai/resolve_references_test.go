package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// FuzzResolveReferences reads a client's body: it must not panic, what it
// answers is within the limit, JSON when the body was, and the same body
// when nothing in it is a reference to an item the tenant keeps.
func FuzzResolveReferences(f *testing.F) {
	st, err := bolt.Open(f.TempDir(), bolt.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	s := ResponsesStore{Store: st}
	o := &ResponsesObject{ID: "resp_0123456789abcdef0123456789abcdef"}
	item := o.itemID("msg_", 0)
	resp, _ := json.Marshal(map[string]any{"id": o.ID, "output": []any{map[string]any{"type": "message", "id": item, "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": strings.Repeat("y", 300)}}}}})
	if err := s.Save(f.Context(), "t", eventstore.Metadata{}, ResponsesRecord{ID: o.ID, Response: resp}); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"input":[{"type":"item_reference","id":"`+item+`"}]}`), int64(1000))
	f.Add([]byte(`{"input":[{"type":"item_reference","id":"`+item+`"},{"type":"item_reference","id":"`+item+`"}]}`), int64(500))
	f.Add([]byte(`{"input":[{"type":"item_reference","id":"msg_67ccd2bf17f0819081ff3bb2cf6508e6"}],"input":"x"}`), int64(1<<20))
	f.Add([]byte(`{"input":"item_reference"}`), int64(10))
	f.Fuzz(func(t *testing.T, body []byte, limit int64) {
		if limit < int64(len(body)) {
			limit = int64(len(body)) // the body itself was read within it
		}
		out, err := s.ResolveReferences(t.Context(), "t", body, limit)
		if err != nil {
			return
		}
		if int64(len(out)) > limit {
			t.Fatalf("%d bytes resolved against a limit of %d", len(out), limit)
		}
		if json.Valid(body) && !json.Valid(out) {
			t.Fatalf("%q resolved to %q", body, out)
		}
		if !strings.Contains(string(body), item) && string(out) != string(body) {
			t.Fatalf("%q changed to %q with no reference to resolve", body, out)
		}
		if n := strings.Count(gjson.GetBytes(out, "input").Raw, strings.Repeat("y", 300)); n > 0 && n > strings.Count(string(body), item) {
			t.Fatalf("%q resolved to %d items", body, n)
		}
	})
}

// A body read within the limit that has nothing to resolve is not refused
// for it, however close to the limit.
func TestResolveReferencesAtTheLimit(t *testing.T) {
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A provider's item, of a response passed through for the tenant:
	// sent on as it is.
	rs := ResponsesStore{Store: st}
	if err := rs.OwnItems(t.Context(), "t", eventstore.Metadata{}, []byte(`{"id":"resp_1","output":[{"id":"msg_67ccd2bf17f0819081ff3bb2cf6508e6"}]}`)); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"input":[{"type":"item_reference","id":"msg_67ccd2bf17f0819081ff3bb2cf6508e6"},{"role":"user","content":"hi"}]}`)
	out, err := rs.ResolveReferences(t.Context(), "t", body, int64(len(body)))
	if err != nil || string(out) != string(body) {
		t.Fatalf("%s, %v", out, err)
	}
}

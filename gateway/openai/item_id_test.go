package openai

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// An output item's id names its response and place, and reads back to
// them; an id Baton did not name reads as none.
func TestItemIDReadsBack(t *testing.T) {
	o := &ResponsesObject{ID: NewResponsesID()}
	for _, prefix := range []string{"msg_", "rs_", "fc_"} {
		for _, at := range []int{0, 3, 12} {
			id := o.itemID(prefix, at)
			resp, got, ok := itemOrigin(id)
			if !ok || resp != o.ID || got != at {
				t.Errorf("%s: %s %d %v", id, resp, got, ok)
			}
		}
	}
	hex := strings.TrimPrefix(o.ID, "resp_")
	for _, id := range []string{"", "msg_", "msg_" + hex, "msg_" + hex + "_", "msg_" + hex + "_-1", "msg_" + hex + "_01", "msg_" + hex + "_1x",
		"xx_" + hex + "_0", "msg_" + strings.ToUpper(hex) + "_0", "msg_" + hex[:31] + "_0", "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b", "resp_" + hex} {
		if r, at, ok := itemOrigin(id); ok {
			t.Errorf("%q read as %s %d", id, r, at)
		}
	}
}

// FuzzItemOrigin: an id that reads is exactly the one itemID writes for
// what it reads as.
func FuzzItemOrigin(f *testing.F) {
	for _, s := range []string{"msg_0123456789abcdef0123456789abcdef_0", "fc_0123456789abcdef0123456789abcdef_12", "rs__", "msg_x_1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		resp, at, ok := itemOrigin(id)
		if !ok {
			return
		}
		prefix, _, _ := strings.Cut(id, "_")
		if want := (&ResponsesObject{ID: resp}).itemID(prefix+"_", at); want != id || at < 0 || !strings.HasPrefix(resp, "resp_") || strconv.Itoa(at) == "" {
			t.Fatalf("%q read as %s %d, which writes %q", id, resp, at, want)
		}
	})
}

// FuzzWithoutOwnReasoning: what comes out of a JSON body is JSON, holds no
// reasoning item Baton named, and is the body itself when there was none.
func FuzzWithoutOwnReasoning(f *testing.F) {
	f.Add(`{"input":[{"type":"reasoning","id":"rs_0123456789abcdef0123456789abcdef_0"},{"role":"user","content":"x"}]}`)
	f.Add(`{"input":[{"type":"reasoning","id":"rs_67ccd2bf17f0819081ff3bb2cf6508e6"}]}`)
	f.Add(`{"input":"reasoning"}`)
	f.Add(`{"input":[{"type":"reasoni\u006eg","id":"rs_0123456789abcdef0123456789abcdef_0"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		out := WithoutOwnReasoning([]byte(body))
		if !json.Valid(out) {
			t.Fatalf("%s became %s", body, out)
		}
		for _, it := range gjson.GetBytes(out, "input").Array() {
			if _, _, ours := itemOrigin(it.Get("id").Str); ours && it.Get("type").Str == "reasoning" {
				t.Fatalf("%s kept %s", body, it.Raw)
			}
		}
	})
}

// Codex sends its reasoning items back without their ids: Claude's
// signature (Baton's answer) still goes only to Claude, and OpenAI's
// encrypted reasoning (a Fernet token) only to OpenAI.
func TestReasoningWithoutIDGoesWhereItCanBeRead(t *testing.T) {
	const body = `{"model":"m","input":[{"role":"user","content":"2+2?"},` +
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"add"}],"encrypted_content":"EqQBCkYIBRgCKkBclaude"},` +
		`{"type":"reasoning","summary":[],"encrypted_content":"gAAAAABopenai"},` +
		`{"role":"assistant","content":"4"},{"role":"user","content":"and 3+3?"}]}`
	rc, err := DecodeResponsesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var sigs []string
	for _, m := range rc.Request.Messages {
		for _, b := range m.Content {
			if b.Type == "thinking" {
				sigs = append(sigs, b.Signature)
			}
		}
	}
	if len(sigs) != 1 || sigs[0] != "EqQBCkYIBRgCKkBclaude" {
		t.Errorf("translated, the thinking blocks' signatures are %q", sigs)
	}
	out := string(WithoutOwnReasoning([]byte(body)))
	if strings.Contains(out, "claude") || !strings.Contains(out, "gAAAAABopenai") {
		t.Errorf("passed through: %s", out)
	}
}

// A conversation begun before Baton named its items after their response
// carries its reasoning items as rs_<a UUIDv7's hex>: still Baton's, so
// translated they are Claude's thinking again, and passed through to
// OpenAI they are taken out.
func TestLegacyReasoningIDIsBatons(t *testing.T) {
	legacy := "rs_" + hexID()
	body := `{"model":"m","input":[{"role":"user","content":"2+2?"},` +
		`{"type":"reasoning","id":"` + legacy + `","summary":[{"type":"summary_text","text":"add"}],"encrypted_content":"EqQBclaude"},` +
		`{"role":"assistant","content":"4"},{"role":"user","content":"and 3+3?"}]}`
	rc, err := DecodeResponsesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	thinking := 0
	for _, m := range rc.Request.Messages {
		for _, b := range m.Content {
			if b.Type == "thinking" && b.Signature == "EqQBclaude" {
				thinking++
			}
		}
	}
	if thinking != 1 {
		t.Errorf("translated, %s's thinking was left out", legacy)
	}
	if out := string(WithoutOwnReasoning([]byte(body))); strings.Contains(out, legacy) {
		t.Errorf("passed through: %s", out)
	}
	// Another server's UUIDv4, or OpenAI's longer id, is not Baton's.
	for _, id := range []string{"rs_" + strings.ReplaceAll("0f8fad5b-d9cb-469f-a165-70867728950e", "-", ""), "rs_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b"} {
		if ownReasoning(id, "EqQBclaude") {
			t.Errorf("%s read as Baton's", id)
		}
	}
}

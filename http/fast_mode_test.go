package http_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// anthropicAnswer is an Anthropic answer, whole and streamed, whose usage
// ends with extra (the speed and geography it was served at).
func anthropicAnswer(extra string) (stream, whole string) {
	return messagesAnswer("msg_fast", "claude-opus-5-5",
		`{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":1,"service_tier":"standard"`+extra+`}`,
		`"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":57,"service_tier":"standard"`+extra+`}`)
}

func postMessages(t *testing.T, e *env, body string) (status int, raw []byte) {
	t.Helper()
	r := e.do("POST", "/v1/messages", e.tenantA, body, "anthropic-version", "2023-06-01", "content-type", "application/json")
	return r.status, r.raw
}

// Anthropic bills fast mode (Claude Code's /fast sends speed fast) at twice
// the standard rates, and US-only inference (inference_geo us, asked for or
// the workspace's default) at 1.1 times them, both together at 2.2 times
// (Claude Opus 5.5: $4 and $20 a million), and says what it served in
// usage.speed and usage.inference_geo. A passed-through call is billed so,
// whole and streamed, and its usage event says how it was served.
func TestPassThroughBillsFastModeAndUSInference(t *testing.T) {
	// 12 input at $4, 57 output at $20, 4000 cache reads at $0.20, a
	// million each, times the rate.
	base := (12*4 + 57*20 + 4000*0.20) / 1e6
	for _, c := range []struct {
		name, asked, served, tier, geo string
		rate                           float64
	}{
		{"fast", `,"speed":"fast"`, `,"speed":"fast","inference_geo":"global"`, "fast", "global", 2},
		{"us", `,"inference_geo":"us"`, `,"speed":"standard","inference_geo":"us"`, "default", "us", 1.1},
		{"workspace default us", ``, `,"speed":"standard","inference_geo":"us"`, "default", "us", 1.1},
		{"fast in the us", `,"speed":"fast","inference_geo":"us"`, `,"speed":"fast","inference_geo":"us"`, "fast", "us", 2.2},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream, whole := anthropicAnswer(c.served)
			e, up := goldenEnv(t, stream, whole, "anthropic")
			want := gateway.RoundUSD(gateway.RoundUSD(base) * c.rate)
			for i, stream := range []bool{false, true} {
				body := `{"model":"anthropic:claude-opus-5-5","max_tokens":100` + c.asked + `,"stream":` + map[bool]string{false: "false", true: "true"}[stream] +
					`,"messages":[{"role":"user","content":"hi"}]}`
				status, raw := postMessages(t, e, body)
				if status != 200 {
					t.Fatalf("stream %v: %d %s", stream, status, raw)
				}
				if !strings.Contains(string(up.last(t).body), c.asked) {
					t.Fatalf("the provider got %s", up.last(t).body)
				}
				var cost gjson.Result
				if stream {
					events := sseRaw(t, strings.NewReader(string(raw)))
					if len(events) < 2 {
						t.Fatalf("stream: %v", events)
					}
					cost = gjson.Get(events[len(events)-2][1], "usage.estimated_cost_usd")
				} else {
					cost = gjson.GetBytes(raw, "usage.estimated_cost_usd")
				}
				if cost.Num != want {
					t.Errorf("stream %v: the answer's cost %v, want %v (%v times the rates)", stream, cost.Raw, want, c.rate)
				}
				evs := e.usageEvents("a", i+1)
				var u gateway.UsageRecord
				if err := json.Unmarshal(evs[i].Data, &u); err != nil {
					t.Fatal(err)
				}
				if u.Usage.ServiceTier != c.tier || u.Usage.Geo != c.geo || u.CostUSD == nil || *u.CostUSD != want {
					t.Errorf("stream %v: usage recorded %+v at %v, want tier %q, geography %q at %v", stream, u.Usage, u.CostUSD, c.tier, c.geo, want)
				}
			}
		})
	}
}

// The hold of a fast-mode or US-only call is at its rate: a budget that
// covers the call's worst case at the standard rates, and not at 2 or 1.1
// times them, cannot take it, and nothing reaches the provider. A model
// whose price has no such rate cannot take it under a budget at all.
func TestFastModeAndUSInferenceAreHeldAtTheirRates(t *testing.T) {
	stream, whole := anthropicAnswer(`,"speed":"standard","inference_geo":"global"`)
	e, up := goldenEnv(t, stream, whole, "anthropic")
	// The worst case at the standard rates: the prompt's bytes bound its
	// tokens at the dearest input rate ($8 a million, the 1-hour cache
	// write) and 1,000 output tokens at $20: $0.020792. US-only, 1.1 times
	// that (and a few bytes more), $0.023056; fast, about twice.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.022, "monthlyUsd": nil}), 200)
	refused := func(body string, want int, says string) {
		t.Helper()
		calls := up.count()
		status, raw := postMessages(t, e, body)
		if status != want || !strings.Contains(gjson.GetBytes(raw, "error.message").Str, says) {
			t.Fatalf("%s: %d %s, want %d saying %q", body, status, raw, want, says)
		}
		if up.count() != calls {
			t.Fatalf("%s: a refused call reached the provider", body)
		}
	}
	refused(`{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"inference_geo":"us","messages":[{"role":"user","content":"hi"}]}`, 400, "budget")
	if status, raw := postMessages(t, e, `{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("standard speed, any geography: %d %s", status, raw)
	}
	refused(`{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"speed":"fast","messages":[{"role":"user","content":"hi"}]}`, 400, "budget")
	// Sonnet has no fast mode, Haiku 4.5 no US-only inference.
	refused(`{"model":"anthropic:claude-sonnet-5-5","max_tokens":10,"speed":"fast","messages":[{"role":"user","content":"hi"}]}`, 403, "speed fast")
	refused(`{"model":"anthropic:claude-haiku-4-5","max_tokens":10,"inference_geo":"us","messages":[{"role":"user","content":"hi"}]}`, 403, "inference_geo us")
}

// Translated to a provider that has no fast mode or regions, speed fast and
// an inference_geo other than global are refused by name rather than
// dropped; their default values pass.
func TestSpeedAndGeoRefusedWhenTranslated(t *testing.T) {
	e, up := goldenEnv(t, "", `{"id":"c","object":"chat.completion","created":1,"model":"gpt-6-luna","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`, "openai")
	for _, c := range []struct {
		field, value string
		status       int
	}{
		{"speed", `"fast"`, 400}, {"inference_geo", `"us"`, 400},
		{"speed", `"standard"`, 200}, {"inference_geo", `"global"`, 200},
	} {
		calls := up.count()
		status, raw := postMessages(t, e, `{"model":"openai:gpt-6-luna","max_tokens":10,"`+c.field+`":`+c.value+`,"messages":[{"role":"user","content":"hi"}]}`)
		if status != c.status {
			t.Fatalf("%s %s: %d %s", c.field, c.value, status, raw)
		}
		if c.status == 400 {
			if !strings.Contains(gjson.GetBytes(raw, "error.message").Str, c.field) {
				t.Errorf("%s %s: the refusal does not name the field: %s", c.field, c.value, raw)
			}
			if up.count() != calls {
				t.Errorf("%s %s: a refused call reached the provider", c.field, c.value)
			}
		}
	}
}

// count is how many requests the upstream got.
func (u *recordingUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

// A workspace whose default geography is the US runs every call that names
// no inference_geo there, at 1.1 times the rates; declared
// (BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO, defaultInferenceGeo in a
// providers file), such calls are held at that rate, and billed at it when
// the answer does not say where it ran. A call that names global, and one
// to a model that does not take the parameter, are held at the standard
// rates.
func TestDeclaredDefaultGeoIsHeldAndBilled(t *testing.T) {
	stream, whole := anthropicAnswer(`,"speed":"standard"`) // says no geography
	up, srv := recordingServer(t, stream, whole)
	vars := map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "provider-key", "BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO": "us"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)

	// Held: the standard worst case ($0.020792, as in
	// TestFastModeAndUSInferenceAreHeldAtTheirRates) fits in $0.022, the
	// US one ($0.023056) does not.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.022, "monthlyUsd": nil}), 200)
	calls := up.count()
	status, raw := postMessages(t, e, `{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`)
	if msg := gjson.GetBytes(raw, "error.message").Str; status != 400 || !strings.Contains(msg, "in the us, where model anthropic:claude-opus-5-5's provider runs a call that names no inference_geo") {
		t.Errorf("no geography, under $0.022: %d %s", status, raw)
	}
	if up.count() != calls {
		t.Error("a refused call reached the provider")
	}
	for _, body := range []string{
		`{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"inference_geo":"global","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"anthropic:claude-haiku-4-5","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`, // takes no inference_geo
	} {
		if status, raw := postMessages(t, e, body); status != 200 {
			t.Errorf("%s: %d %s", body, status, raw)
		}
	}

	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": nil, "monthlyUsd": nil}), 200)

	// Billed: 12 input at $4, 4,000 cache reads at $0.20 and 57 output
	// at $20 a million, 1.1 times over in the US.
	standard := (12*4 + 4000*0.20 + 57*20) / 1e6
	for _, c := range []struct {
		geo  string
		want float64
	}{{"", 1.1 * standard}, {`,"inference_geo":"global"`, standard}, {`,"inference_geo":"us"`, 1.1 * standard}} {
		status, raw := postMessages(t, e, `{"model":"anthropic:claude-opus-5-5","max_tokens":100`+c.geo+`,"messages":[{"role":"user","content":"hi"}]}`)
		if cost := gjson.GetBytes(raw, "usage.estimated_cost_usd").Float(); status != 200 || math.Abs(cost-c.want) > 1e-9 {
			t.Errorf("geo %q: %d, cost %v, want %v\n%s", c.geo, status, cost, c.want, raw)
		}
	}
	// Translated from the chat front, Baton's adapter names no geography:
	// the workspace's default holds.
	r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-opus-5-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
	if cost := r.num("usage.estimated_cost_usd"); r.status != 200 || math.Abs(cost-1.1*standard) > 1e-9 {
		t.Errorf("chat, translated: %d, cost %v, want %v\n%s", r.status, cost, 1.1*standard, r.raw)
	}

	// A default that is not a geography, or on a kind without them, is
	// refused when the catalog is built.
	vars["BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO"] = "eu"
	if _, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }}); err == nil || !strings.Contains(err.Error(), "BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO") {
		t.Errorf("eu: %v", err)
	}
	vars["BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO"] = ""
	file := filepath.Join(t.TempDir(), "providers.json")
	if err := os.WriteFile(file, []byte(`{"providers":[{"name":"oai","kind":"openai","baseUrl":"`+srv.URL+`","defaultInferenceGeo":"us","models":[]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }, ProvidersFile: file, ProvidersRequired: true}); err == nil || !strings.Contains(err.Error(), "defaultInferenceGeo") {
		t.Errorf("an openai provider with a default geography: %v", err)
	}
}

// A call asking fast mode that the answer says was served at the standard
// speed is billed the standard rates, not the fast rate it was held at.
func TestFastAskedStandardServed(t *testing.T) {
	base := (12*4 + 57*20 + 4000*0.20) / 1e6
	stream, whole := anthropicAnswer(`,"speed":"standard"`)
	e, _ := goldenEnv(t, stream, whole, "anthropic")
	for i, s := range []string{"false", "true"} {
		status, raw := postMessages(t, e, `{"model":"anthropic:claude-opus-5-5","max_tokens":100,"speed":"fast","stream":`+s+`,"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("stream %s: %d %s", s, status, raw)
		}
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", i+1)[i].Data, &u); err != nil {
			t.Fatal(err)
		}
		if want := gateway.RoundUSD(base); u.CostUSD == nil || *u.CostUSD != want || u.Usage.ServiceTier != "default" {
			t.Errorf("stream %s: billed %v at tier %q, want %v at the standard rates", s, u.CostUSD, u.Usage.ServiceTier, want)
		}
	}
}

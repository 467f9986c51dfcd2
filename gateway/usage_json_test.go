package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

func FuzzUsageRecordJSON(f *testing.F) {
	f.Add("acme", "key_1", "chat.completions", "openai:gpt-x", "openai", true, 12, 34, 5, 6, 2, false, 0.00123, false, int64(250), "ok", "req_1", int64(1764000000123456789), 0, "priority", true, 3, "us", 2)
	f.Add("a\"b", "k<", "f&", "m\n", "p\u2028", false, -1, 0, 0, 0, -3, true, 1e-9, true, int64(-5), "", "", int64(0), 3600, "", false, -1, "", -2)
	f.Add("t", "k", "f", "m", "p", false, 0, 0, 0, 0, 0, false, 1e21, false, int64(0), "x", "y", int64(-62135596800000000), -1800, "a\"<\u2028", true, 0, "x\u2028\"", 0)
	f.Fuzz(func(t *testing.T, tenant, key, front, model, provider string, stream bool, in, out, cr, cw, cw1h int, est bool, cost float64, nilCost bool, lat int64, outcome, reqID string, atNs int64, zone int, tier string, autoTier bool, searches int, geo string, files int) {
		r := UsageRecord{Tenant: tenant, KeyID: key, Front: front, Model: model, Provider: provider, Stream: stream,
			Usage:   Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw, CacheWrite1hTokens: cw1h, Estimated: est, ServiceTier: tier, WebSearches: searches, FileSearches: files, Geo: geo},
			CostUSD: &cost, LatencyMs: lat, Outcome: outcome, RequestID: reqID, AutoTier: autoTier}
		if nilCost {
			r.CostUSD = nil
		}
		if atNs != 0 {
			r.At = time.Unix(0, atNs).In(time.FixedZone("z", zone%100000))
		}
		want, werr := json.Marshal(&r)
		got, gerr := r.appendJSON(nil)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("appendJSON = %s, %v\njson.Marshal = %s, %v", got, gerr, want, werr)
		}
	})
}

func TestUsageRecordJSONNotFinite(t *testing.T) {
	for _, c := range []float64{math.NaN(), math.Inf(1)} {
		r := UsageRecord{CostUSD: &c}
		if _, err := r.appendJSON(nil); err == nil {
			t.Fatalf("a cost of %v must be refused, as json.Marshal refuses it", c)
		}
	}
}

// A usage event keeps the 1-hour part of the cache writes, so that the
// usage it replays is priced as the call was; an event written before
// there was one decodes with none.
func TestUsageRecordKeepsOneHourCacheWrites(t *testing.T) {
	price := &Price{InputPerMTok: 2, OutputPerMTok: 10, CacheReadPerMTok: 0.2, CacheWritePerMTok: 2.5, CacheWrite1hPerMTok: 4, Source: "test"}
	r := UsageRecord{Tenant: "t", Usage: Usage{InputTokens: 10, OutputTokens: 5, CacheWriteTokens: 3000, CacheWrite1hTokens: 1000}}
	b, err := r.appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"cache_creation_input_tokens":3000,"cache_creation_1h_input_tokens":1000`)) {
		t.Fatalf("the event has no 1-hour part: %s", b)
	}
	var back UsageRecord
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Usage != r.Usage || price.Cost(back.Usage) != price.Cost(r.Usage) {
		t.Fatalf("decoded %+v, want %+v", back.Usage, r.Usage)
	}
	// 10*2 + 5*10 + 2000*2.5 + 1000*4, a million tokens' worth each
	if got, want := price.Cost(back.Usage), RoundUSD((10*2+5*10+2000*2.5+1000*4)/1e6); got != want {
		t.Fatalf("cost %v, want %v", got, want)
	}
	var old UsageRecord
	if err := json.Unmarshal([]byte(`{"tenant":"t","usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":3000},"costUsd":0.0075}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Usage.CacheWrite1hTokens != 0 || old.Usage.CacheWriteTokens != 3000 {
		t.Fatalf("an old event decodes as %+v", old.Usage)
	}
}

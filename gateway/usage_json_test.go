package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

func FuzzUsageRecordJSON(f *testing.F) {
	f.Add("acme", "key_1", "chat.completions", "openai:gpt-x", "openai", true, 12, 34, 5, 6, false, 0.00123, false, int64(250), "ok", "req_1", int64(1764000000123456789), 0)
	f.Add("a\"b", "k<", "f&", "m\n", "p\u2028", false, -1, 0, 0, 0, true, 1e-9, true, int64(-5), "", "", int64(0), 3600)
	f.Add("t", "k", "f", "m", "p", false, 0, 0, 0, 0, false, 1e21, false, int64(0), "x", "y", int64(-62135596800000000), -1800)
	f.Fuzz(func(t *testing.T, tenant, key, front, model, provider string, stream bool, in, out, cr, cw int, est bool, cost float64, nilCost bool, lat int64, outcome, reqID string, atNs int64, zone int) {
		r := UsageRecord{Tenant: tenant, KeyID: key, Front: front, Model: model, Provider: provider, Stream: stream,
			Usage:   Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw, Estimated: est},
			CostUSD: &cost, LatencyMs: lat, Outcome: outcome, RequestID: reqID}
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

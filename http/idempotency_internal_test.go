package http

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
)

// FuzzIdemBodyHashes: whenever a body gets a JSON hash, the handlers read
// it exactly as they read its canonical form (which is what the hash
// covers), so two bodies with one JSON hash are one request to them; and
// reordering an object's keys keeps the hash.
func FuzzIdemBodyHashes(f *testing.F) {
	for _, s := range []string{
		`{"type":"summarize","input":{"text":"x"},"options":{"maxAttempts":2,"llm":{"mode":"cheap","maxCostUsd":0.5}}}`,
		`{"objective":"o","targetExecutor":"t","riskLevel":"high","constraints":["a"]}`,
		`{"Type":"x","type":"summarize"}`, `{"riskLevel":"low","RiskLevel":"high"}`, `{"a":1e2}`, `{"a":"\ud800"}`, `null`, ``, `[]`, `{"a":{"a":{"a":[]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := ledger.BodyHashes("generate", body)
		if h.Raw == "" || h.Raw == h.JSON {
			t.Fatalf("hashes %+v", h)
		}
		if h.JSON == "" {
			return
		}
		canon, err := domain.CanonicalJSON(body)
		if err != nil {
			t.Fatalf("a JSON hash for a body without a canonical form: %v", err)
		}
		for _, dst := range []func() any{func() any { return new(generateRequest) }, func() any { return new(planRequest) }, func() any { return new(any) }} {
			a, b := dst(), dst()
			errA, errB := decodeBody(body, a), decodeBody(canon, b)
			// Raw fields (json.RawMessage) keep their bytes and are read
			// later: compare what was read as canonical JSON too.
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			ca, _ := domain.CanonicalJSON(ja)
			cb, _ := domain.CanonicalJSON(jb)
			if (errA == nil) != (errB == nil) || string(ca) != string(cb) {
				t.Fatalf("%q and its canonical form %q read differently: %v / %v, %s / %s", body, canon, errA, errB, ja, jb)
			}
		}
		if again := ledger.BodyHashes("generate", canon); again.JSON != h.JSON {
			t.Fatalf("the canonical form of %q hashes differently", body)
		}
	})
}

package translog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
)

func FuzzReadBundle(f *testing.F) {
	ev := domain.Recorded{Seq: 1, Type: "ContractCreated", Data: json.RawMessage(`{}`), Actor: "a", RecordedAt: time.Unix(1, 0).UTC()}
	good, _ := json.Marshal(Bundle{Format: BundleFormat, HandoffID: "h1", Events: []domain.Recorded{ev}, Receipts: []Receipt{{Seq: 1, LeafIndex: 3, Proof: "c2sp.org/tlog-proof@v1\nindex 3\n\no\n4\nAAAA\n"}}})
	f.Add(good)
	f.Add([]byte(`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[{"seq":1,"leafIndex":0}]}`))
	f.Add([]byte(`{"format":"x"}`))
	_, vkey, _ := GenerateKey("fuzz.test/log", bytes.NewReader(make([]byte, 64)))
	f.Fuzz(func(t *testing.T, b []byte) {
		bd, err := ReadBundle(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range bd.Receipts {
			if r.Seq == 0 || r.Seq > uint64(len(bd.Events)) {
				t.Fatalf("receipt %+v accepted for %d events", r, len(bd.Events))
			}
		}
		// Whatever it holds, verifying it reports, never panics.
		if _, err := VerifyBundle(bd, vkey, &bd); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadBundleRefuses(t *testing.T) {
	for _, s := range []string{
		`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[],"x":1}`,
		`{"format":"baton.audit-bundle/v2","handoffId":"h","events":[],"receipts":[]}`,
		`{"format":"baton.audit-bundle/v1","handoffId":"h\n","events":[],"receipts":[]}`,
		`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[{"seq":1,"leafIndex":0}]}`,
		`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[]} {}`,
	} {
		if _, err := ReadBundle(bytes.NewReader([]byte(s))); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

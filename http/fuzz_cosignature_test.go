package http_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/eventstore/translog/translogtest"
)

// FuzzCosignatureBodies posts arbitrary bodies to /v1/log/cosignature of
// a log with one witness. "$CP" in a body is the log's latest signed
// checkpoint and "$COSIGNED" that checkpoint with the witness's
// cosignature, as JSON strings, which the fuzzer could not forge. Every
// answer is deliberate (never a 500), and a 200 has added at most the one
// witness's cosignature.
func FuzzCosignatureBodies(f *testing.F) {
	for _, s := range []string{
		`{"checkpoint":$COSIGNED}`, `{"checkpoint":$CP}`, `{"checkpoint":"not a checkpoint"}`, `{"checkpoint":""}`,
		`{"checkpoint":1}`, `[]`, `{`, ``, `{"checkpoint":$COSIGNED,"checkpoint":$CP}`,
		`{"checkpoint":"baton.example/test\n1\nAAAA\n\n— w1.example AAAA\n"}`,
	} {
		f.Add([]byte(s))
	}
	w, err := translogtest.NewWitness("w1.example")
	if err != nil {
		f.Fatal(err)
	}
	skey, _, err := translog.GenerateKey("baton.example/test", nil)
	if err != nil {
		f.Fatal(err)
	}
	envLogKey, envLogWitnesses = skey, []string{w.VKey}
	e := newEnv(f)
	envLogKey, envLogWitnesses = "", nil
	e.waitLogged(int64(e.events(e.contract(e.tenantA, nil))))
	h := e.srv.Config.Handler
	quoted := func(b []byte) []byte { q, _ := json.Marshal(string(b)); return q }
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		signed, _ := e.tlog.Checkpoint()
		body = bytes.ReplaceAll(body, []byte("$COSIGNED"), quoted(w.Cosign(signed)))
		body = bytes.ReplaceAll(body, []byte("$CP"), quoted(signed))
		req := httptest.NewRequest(http.MethodPost, "/v1/log/cosignature", bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			var ans struct{ Added *int }
			if json.Unmarshal(rec.Body.Bytes(), &ans) != nil || ans.Added == nil || *ans.Added < 0 || *ans.Added > 1 {
				t.Fatalf("answered %s to %q", rec.Body.String(), body)
			}
		case 400, 409, 413, 422:
		default:
			t.Fatalf("answered %d to %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}

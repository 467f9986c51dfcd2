package secrets

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// proofDoc is a proof callback whose artifacts' texts are texts.
func proofDoc(t testing.TB, summary string, texts ...string) []byte {
	t.Helper()
	var arts []any
	for _, x := range texts {
		arts = append(arts, map[string]any{"type": "log", "text": x})
	}
	doc, err := json.Marshal(map[string]any{"executorRunId": "run-1", "status": "RUNNING",
		"proof": map[string]any{"summary": summary, "artifacts": arts}})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// swap replaces the first old in s by new.
func swap(s, old, new string) string { return strings.Replace(s, old, new, 1) }

// TestScanJSONFindsCutAndDisguisedTokens: a token cut by a line break
// inside one string, cut in two across two strings, or written with a
// look-alike letter is found, named by the pointer of the string where it
// starts, never quoted.
func TestScanJSONFindsCutAndDisguisedTokens(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	gh, btn, aws := f["github"].token, f["baton"].token, f["aws"].token
	tests := []struct {
		name    string
		doc     []byte
		rule    string
		pointer string
	}{
		{"github token cut by a newline", proofDoc(t, "ok", "export GITHUB_TOKEN="+gh[:17]+"\n"+gh[17:]+"\ndone"), "github-pat", "/proof/artifacts/0/text"},
		{"github token cut by CR LF", proofDoc(t, "ok", "token "+gh[:9]+"\r\n"+gh[9:]), "github-pat", "/proof/artifacts/0/text"},
		{"baton key wrapped over three lines", proofDoc(t, "ok", "key:\n"+btn[:15]+"\n"+btn[15:30]+"\n"+btn[30:]), "baton-api-key", "/proof/artifacts/0/text"},
		{"github token across two artifacts", proofDoc(t, "ok", "first half "+gh[:20], gh[20:]+" second half"), "github-pat", "/proof/artifacts/0/text"},
		{"baton key across two artifacts, their types between", []byte(`{"proof":{"summary":"ok","artifacts":[{"type":"log","text":"used ` + btn[:25] + `"},{"type":"log","text":"` + btn[25:] + ` for the call"}]}}`), "baton-api-key", "/proof/artifacts/0/text"},
		{"github token across two result artifacts", []byte(`{"result":{"summary":"done","artifacts":[{"type":"log","text":"` + gh[:30] + `"},{"type":"log","text":"` + gh[30:] + `"}],"output":"ok"}}`), "github-pat", "/result/artifacts/0/text"},
		{"aws key across three artifacts", proofDoc(t, "ok", aws[:6], aws[6:13], aws[13:]), "aws-access-token", "/proof/artifacts/0/text"},
		{"cyrillic er in ghp_", proofDoc(t, "ok", "GITHUB_TOKEN="+swap(gh, "p", "\u0440")), "github-pat", "/proof/artifacts/0/text"},
		{"cyrillic shha for h in ghp_", proofDoc(t, "ok", swap(gh, "h", "\u04bb")), "github-pat", "/proof/artifacts/0/text"},
		{"greek capital alpha in AKIA", proofDoc(t, "ok", "id "+swap(aws, "A", "\u0391")), "aws-access-token", "/proof/artifacts/0/text"},
		{"combining overlay on a letter", proofDoc(t, "ok", swap(btn, "b", "b\u0335")), "baton-api-key", "/proof/artifacts/0/text"},
		{"look-alike letter and a cut across artifacts", proofDoc(t, "ok", swap(gh[:20], "p", "\u0440"), gh[20:]), "github-pat", "/proof/artifacts/0/text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ScanJSON(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(got, func(g Finding) bool { return g.RuleID == tc.rule && g.Pointer == tc.pointer }) {
				t.Fatalf("findings %+v, want %s at %s", got, tc.rule, tc.pointer)
			}
			b, _ := json.Marshal(got)
			assertNoLeak(t, "findings", string(b))
		})
	}
}

// TestScanJSONJoinedPassKeepsOrdinaryDocumentsClean: the documents the
// project shows and tests with (README, protocol guide, benchmark body),
// prose in other scripts, and logs with ids, hashes and URLs on every
// line, joined, hold nothing.
func TestScanJSONJoinedPassKeepsOrdinaryDocumentsClean(t *testing.T) {
	s := newScanner(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var log strings.Builder
	for i := range 40 {
		id := uuid.Must(uuid.NewRandomFromReader(rngReader{rng}))
		log.WriteString("2026-11-22T10:00:" + string(rune('0'+i%10)) + "0Z job " + id.String() + " sha256:" + randomFrom(rng, "0123456789abcdef", 64) +
			" https://ci.example.com/runs/" + randomFrom(rng, digits, 6) + "?page=2&tab=logs commit " + randomFrom(rng, "0123456789abcdef", 40) + "\r\n")
	}
	docs := map[string]string{
		"README contract":  `{"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium","approvalMode":"manual","proofRequired":["log"]}`,
		"README proof":     `{"executorRunId":"run-1","status":"RUNNING","proof":{"summary":"renewed","artifacts":[{"type":"log","text":"certbot renew: success"}]}}`,
		"README approval":  `{"status":"APPROVED","approvedBy":"alice"}`,
		"README review":    `{"verdict":"verified","reviewer":"verifier"}`,
		"README result":    `{"executorRunId":"run-1","status":"SUCCEEDED","result":{"summary":"rotated","output":"valid until 2027-02-20"}}`,
		"README generate":  `{"type":"business_strategy","input":{"goal":"double trial-to-paid conversion","audience":"small accounting firms"}}`,
		"README plan":      `{"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","riskLevel":"high"}`,
		"protocol result":  `{"executorType":"ops-bot","executorRunId":"run-7","status":"SUCCEEDED","result":{"summary":"Certificate rotated","output":"new cert valid until 2027-02-20","artifacts":[{"type":"log","text":"certbot renew: success\nnginx -s reload: ok"},{"type":"url","text":"https://staging.example.com/healthz"}]}}`,
		"benchmark body":   string(body2KB()),
		"logs, joined":     string(proofDoc(t, "Renewed on 40 hosts", log.String(), log.String()[:700], "token rotation: none needed")),
		"russian prose":    string(proofDoc(t, "Сертификат обновлён", "Проверка пройдена: сервер отвечает, ключ не менялся.\nПароль не нужен.", "Журнал: всё в порядке")),
		"greek prose":      string(proofDoc(t, "Το πιστοποιητικό ανανεώθηκε", "Ο έλεγχος πέρασε: ο διακομιστής απαντά.\nΚανένα κλειδί δεν άλλαξε.")),
		"japanese prose":   string(proofDoc(t, "証明書を更新しました", "確認済み：サーバーは応答しています。\nキーは変更していません。")),
		"accented french":  string(proofDoc(t, "Certificat renouvelé", "Vérifié : le serveur répond, aucune clé ni mot de passe n'a changé.")),
		"words about keys": string(proofDoc(t, "the API key rotation is scheduled", "token:", "none", "password:", "unchanged", "secret", "rotation")),
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			got, err := s.ScanJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Fatalf("false positive %+v", got)
			}
		})
	}
}

// rngReader feeds uuid from a seeded generator.
type rngReader struct{ rng *rand.Rand }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.rng.IntN(256))
	}
	return len(p), nil
}

// TestScanText: a header value that is a token is a finding; the ids and
// keys clients send are not.
func TestScanText(t *testing.T) {
	s := newScanner(t)
	lazy := NewLazy()
	f := fakes()
	for _, tc := range []struct {
		name, v, rule string
	}{
		{"github token", f["github"].token, "github-pat"},
		{"baton key", f["baton"].token, "baton-api-key"},
		{"aws key id", f["aws"].token, "aws-access-token"},
		{"look-alike github token", swap(f["github"].token, "p", "\u0440"), "github-pat"},
		{"assignment", "api_key=" + f["generic"].core, "generic-api-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sc := range []interface {
				ScanText(string) (string, bool)
			}{s, lazy} {
				if rule, ok := sc.ScanText(tc.v); !ok || rule != tc.rule {
					t.Fatalf("%T: %q, %v; want %s", sc, rule, ok, tc.rule)
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(5, 6))
	clean := []string{"", "req-1", "proof-run-1", "approve-0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "demo-1", "gen-1",
		"req_" + uuid.Must(uuid.NewV7()).String(), randomFrom(rng, "0123456789abcdef", 32),
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Root=1-67891233-abcdef012345678912345678", "café-1"}
	for range 200 {
		clean = append(clean, uuid.Must(uuid.NewRandomFromReader(rngReader{rng})).String())
	}
	for _, v := range clean {
		if rule, ok := s.ScanText(v); ok {
			t.Errorf("%q: %s", v, rule)
		}
		// The UUID shortcut gives what a scan would.
		if isUUID(v) {
			if got := s.ScanString("", v); len(got) != 0 {
				t.Errorf("%q: a scan finds %v", v, got)
			}
		}
	}
}

// BenchmarkScanJSONNonASCII is BenchmarkScanJSON's kind of body in
// Cyrillic prose, every string folded in the second pass.
func BenchmarkScanJSONNonASCII(b *testing.B) {
	s := newScanner(b)
	var log strings.Builder
	for i := range 20 {
		log.WriteString("2026-11-22T10:0" + string(rune('0'+i%10)) + ":00Z сертификат обновлён для узла staging-" + string(rune('0'+i%10)) + ", проверка пройдена\n")
	}
	doc := proofDoc(b, "Сертификат обновлён на трёх узлах; проверки здоровья прошли, перезапуск nginx выполнен.", log.String(), "Журнал: всё в порядке, ключи не менялись.")
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ScanJSON(doc, "/proof"); err != nil {
			b.Fatal(err)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/eventstore/storebench"
)

// The generate benchmark measures generate's own work (input validation,
// templating, output parsing and validation, the Idempotency-Key records)
// on top of a plain gateway call: the same loopback upstream answers a chat
// completion through Baton, a /v1/generate, and a /v1/generate with a new
// Idempotency-Key each time, in alternating slices.

const (
	genModel = "json-fast"  // answers at once
	genPaced = "json-paced" // answers after the model time
)

var genAnswer = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"json-fast",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"summary\":\"Baton records every step as an event.\",\"keyPoints\":[\"append-only\",\"hash-chained\"]}"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140}}` + "\n")

// genUpstream answers at once, or after modelTime for the paced model.
func genUpstream(modelTime time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"model":"`+genPaced+`"`)) && !gwSleep(r.Context(), modelTime) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(genAnswer)))
		w.Write(genAnswer)
	}
}

// genKind is one way of calling.
type genKind struct {
	name string
	path string
	body []byte
	idem bool
}

type genRow struct {
	ModelTime time.Duration
	Conc      int
	Stats     map[string]gwStats
	CPU       map[string]time.Duration // Baton's CPU time per call
}

type generateResult struct {
	ModelTime time.Duration
	Rows      []genRow
	Kinds     []string
	Duration  time.Duration
}

func benchGenerate(ctx context.Context, dir string, d, modelTime time.Duration, stdout io.Writer) (generateResult, error) {
	pacedOnly := modelTime < 0
	modelTime = max(modelTime, -modelTime)
	res := generateResult{Duration: d, ModelTime: modelTime}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	up := &http.Server{Handler: genUpstream(modelTime), ReadHeaderTimeout: 10 * time.Second}
	go up.Serve(ln)
	defer up.Close()
	providers := filepath.Join(dir, "providers.json")
	spec := map[string]any{"providers": []any{map[string]any{
		"name": gwProvider, "kind": "openai-compatible", "baseUrl": "http://" + ln.Addr().String() + "/v1",
		"models": []any{
			map[string]any{"name": genModel, "contextTokens": 8192, "supportsJson": true, "modes": []string{"cheap"},
				"pricing": map[string]any{"inputPerMTok": 0.1, "outputPerMTok": 0.4, "source": "benchmark: made-up price"}},
			map[string]any{"name": genPaced, "contextTokens": 8192, "supportsJson": true, "modes": []string{"cheap"},
				"pricing": map[string]any{"inputPerMTok": 0.1, "outputPerMTok": 0.4, "source": "benchmark: made-up price"}},
		},
	}}}
	if err := writeJSONFile(providers, spec); err != nil {
		return res, err
	}
	child, err := startBaton(dir, providers)
	if err != nil {
		return res, err
	}
	defer child.stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256, IdleConnTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	key, err := child.createTenantKey(ctx, client, "bench")
	if err != nil {
		return res, err
	}
	kindsFor := func(name string) []genKind {
		model := gwProvider + ":" + name
		kinds := []genKind{
			{name: "chat completion", path: "/v1/chat/completions",
				body: []byte(`{"model":"` + model + `","max_tokens":400,"messages":[{"role":"user","content":"Summarise: Baton records every handoff step as an immutable, hash-chained event."}]}`)},
			{name: "generate", path: "/v1/generate",
				body: []byte(`{"type":"summarize","input":{"text":"Baton records every handoff step as an immutable, hash-chained event.","maxWords":30},"options":{"llm":{"model":"` + model + `"}}}`)},
		}
		return append(kinds, genKind{name: "generate + Idempotency-Key", path: kinds[1].path, body: kinds[1].body, idem: true})
	}
	for _, k := range kindsFor(genModel) {
		res.Kinds = append(res.Kinds, k.name)
	}
	var seq atomic.Int64
	call := func(k genKind) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, child.base+k.path, bytes.NewReader(k.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		if k.idem {
			req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(seq.Add(1), 10))
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s: %s: %.300s", k.path, resp.Status, b)
		}
		return nil
	}
	// spread: as in gwSide, caller i starts i/conc of spread late, so the
	// callers of the paced model do not arrive in one burst.
	side := func(k genKind, conc int, dur, spread time.Duration) ([]time.Duration, time.Duration, error) {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		var fail atomic.Pointer[error]
		start := time.Now()
		for i := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				if spread > 0 && i > 0 {
					time.Sleep(spread * time.Duration(i) / time.Duration(conc))
				}
				for time.Since(start) < dur && fail.Load() == nil {
					t0 := time.Now()
					if err := call(k); err != nil {
						fail.CompareAndSwap(nil, &err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if p := fail.Load(); p != nil {
			return nil, 0, *p
		}
		return lat, time.Since(start), nil
	}
	slice := min(max(d/6, 100*time.Millisecond), time.Second)
	type series struct {
		modelTime time.Duration
		kinds     []genKind
	}
	all := []series{{0, kindsFor(genModel)}}
	if pacedOnly {
		all = all[:0]
	}
	if modelTime > 0 {
		all = append(all, series{modelTime, kindsFor(genPaced)})
	}
	for _, se := range all {
		kinds := se.kinds
		for _, conc := range []int{1, 16} {
			row := genRow{ModelTime: se.modelTime, Conc: conc, Stats: map[string]gwStats{}, CPU: map[string]time.Duration{}}
			lats := map[string][]time.Duration{}
			els := map[string]time.Duration{}
			cpu := map[string]time.Duration{}
			pid := child.cmd.Process.Pid
			for _, k := range kinds { // warm-up
				if _, _, err := side(k, conc, 200*time.Millisecond, se.modelTime); err != nil {
					return res, err
				}
			}
			rounds := max(1, int(d/slice))
			switch {
			case se.modelTime > 0 && conc == 16:
				rounds *= 4 // the goal's rows: more calls for a steadier p99
			case se.modelTime > 0:
				rounds *= 5 // one paced caller makes about 48 calls a second
			}
			for round := 0; round < rounds; round++ {
				for i := range kinds {
					k := kinds[(i+round)%len(kinds)] // rotate the order: noise falls on all alike
					c0 := procCPU(pid)
					l, el, err := side(k, conc, slice, se.modelTime)
					if err != nil {
						return res, err
					}
					cpu[k.name] += procCPU(pid) - c0
					lats[k.name] = append(lats[k.name], l...)
					els[k.name] += el
				}
			}
			for _, k := range kinds {
				row.Stats[k.name] = gwSummarize(lats[k.name], els[k.name])
				if n := len(lats[k.name]); n > 0 {
					row.CPU[k.name] = cpu[k.name] / time.Duration(n)
				}
			}
			base := row.Stats[kinds[0].name]
			for _, k := range kinds[1:] {
				s := row.Stats[k.name]
				fmt.Fprintf(stdout, "generate, model time %v, %2d callers: %-27s p50 %v p99 %v (added over a chat completion: %s / %s; Baton CPU per call %v against %v)\n",
					se.modelTime, conc, k.name, round(s.P50), round(s.P99), signed(s.P50-base.P50), signed(s.P99-base.P99), round(row.CPU[k.name]), round(row.CPU[kinds[0].name]))
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

// generateReport writes the generate benchmark; appends, when the store
// benchmark ran in the same run, give the floor for the idempotency record
// (one durable append).
func generateReport(r generateResult, appends []storebench.AppendResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Structured generation: generate's own overhead\n\n")
	fmt.Fprintf(&b, "The same loopback upstream (an OpenAI-compatible server answering with a valid `summarize` output, at once (`%s`) or after %v (`%s`), as in the gateway benchmark) is called three ways through one Baton child process, in rotating slices of the same run: a plain chat completion (the gateway path), `POST /v1/generate` (adds input validation, templating, structured-output request, lenient parsing and output validation), and `POST /v1/generate` with a new `Idempotency-Key` each call (adds a read of the key's stream, the in-memory claim, and the answer's `IdempotencyCompleted` event, appended and fsynced before the client is answered so that a retry always gets it; on the embedded store the claim needs no commit, as only this process writes the store). Callers of the paced model start spread over one model time, as in the gateway benchmark. Added = generate − chat completion, per percentile; Baton's CPU per call is its user and system time over the slices of that call kind (from `/proc/<pid>/stat`), divided by their calls; the paced rows, the goal's, run longer than the others: five times as long at 1 caller (one caller makes about 48 calls a second, so about 950 calls per kind, and a p99 is then about the tenth slowest call: still noisier than the 16 callers' row), four times at 16. Goal: under 2 ms p99 added.\n\n",
		genModel, r.ModelTime, genPaced)
	fmt.Fprintf(&b, "| model | callers | call | calls | p50 | p99 | added p50 | added p99 | calls/s | Baton CPU per call |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	// p99 added by callers and model time: generate, with the key.
	added := map[int]map[time.Duration][2]time.Duration{1: {}, 16: {}}
	for _, row := range r.Rows {
		base := row.Stats[r.Kinds[0]]
		model := "at once"
		if row.ModelTime > 0 {
			model = "after " + row.ModelTime.String()
		}
		for i, k := range r.Kinds {
			s := row.Stats[k]
			a50, a99 := "", ""
			if i > 0 {
				a50, a99 = signed(s.P50-base.P50), signed(s.P99-base.P99)
				if m, ok := added[row.Conc]; ok {
					v := m[row.ModelTime]
					v[i-1] = s.P99 - base.P99
					m[row.ModelTime] = v
				}
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %v | %v | %s | %s | %.0f | %v |\n", model, row.Conc, k, s.N, round(s.P50), round(s.P99), a50, a99, s.perSec(), round(row.CPU[k]))
		}
	}
	fmt.Fprintf(&b, "\nGoal (p99 added at 1 and at 16 callers under 2 ms), held to the paced model's rows as in the gateway benchmark (*Which rows the goals hold to*), with the saturated rows beside it:\n\n")
	mts := []time.Duration{0}
	if r.ModelTime > 0 {
		mts = []time.Duration{r.ModelTime, 0} // the goal's row first
	}
	for _, mt := range mts {
		v, ok := added[16][mt]
		if !ok {
			continue
		}
		label := "model answering at once (cores saturated; reported, not the goal's row)"
		if mt > 0 {
			label = "model taking " + mt.String()
		}
		w, has1 := added[1][mt]
		under := func(k int) bool { return v[k] < 2*time.Millisecond && (!has1 || w[k] < 2*time.Millisecond) }
		fmt.Fprintf(&b, "- %s: generate %s, %s; generate with an Idempotency-Key %s, %s", label,
			signed(v[0]), verdict(under(0), mt > 0), signed(v[1]), verdict(under(1), mt > 0))
		if has1 {
			fmt.Fprintf(&b, " (at 1 caller: %s and %s)", signed(w[0]), signed(w[1]))
		}
		fmt.Fprintf(&b, "\n")
	}
	for _, a := range appends {
		if a.Writers == 16 {
			fmt.Fprintf(&b, "\nThe floor for the Idempotency-Key: the key's answer is one durable append, and in this run's store benchmark a durable append at 16 concurrent writers, with no HTTP load beside it, took p50 %v and p99 %v on its own. "+
				"Baton does not answer before the record is on disk, because a client that got an answer and retries after a crash must get the same answer again (see `docs/api.md`, Idempotency-Key).\n",
				round(a.P50), round(a.P99))
		}
	}
	fmt.Fprintf(&b, "\nHistory, 2026-11-25 (Intel Xeon, 2 cores): the idempotency record was a bbolt commit, two fdatasyncs and about a dozen pages per commit (measured: p50 915 µs, p99 3.6 ms inside Baton at 16 paced callers), and `make bench` gave +2.74 ms p99 added at 16 paced callers. "+
		"That day the embedded store gained a journal: an append is acknowledged once its group commit is written there and fdatasynced, one write and one fdatasync, and an indexer moves it into the bbolt file every 10 ms (`docs/eventstore.md`). "+
		"Inside Baton at 16 paced callers (throwaway timers, not kept) the append then took p50 465 µs, p99 2.1 to 2.3 ms, and the journal's fdatasync alone p50 310 µs, p99 1.1 to 1.2 ms: this virtual disk's fdatasync has a tail of over a millisecond when the machine is not idle (one page written and fdatasynced in a loop: p99 235 µs; with 0.2 to 1 ms pauses between: p50 220 to 240 µs, p99 520 to 600 µs). "+
		"With two fdatasyncs in flight the p99 added at 16 paced callers was +1.31 to +2.78 ms over 15 runs, median +2.39 ms; with one at a time (kept) +1.27 to +2.35 ms over 8, median +1.87 ms, and p50 about 120 µs lower (the store benchmark at 16 writers is about 20%% slower with one, above its goals either way). "+
		"Tried and not kept, none better than the run-to-run spread: the indexer every 50, 100 or 250 ms instead of 10 (Baton's CPU per paced call 515 to 555 µs against 617 to 624 µs, but the saturated rows' p99 0.5 to 1.5 ms worse: its commits come in larger bursts); no indexing during the run at all (the journal's fdatasync tail did not shrink, so the bbolt commits beside it are not what makes it); answering each group from its fdatasync's goroutine instead of a completer (the store benchmark 15%% slower); the completer running the fdatasync itself instead of a goroutine per group (the store benchmark at 16 writers 18%% faster, the paced p50 added about 50 µs higher, its p99 within the spread: three runs each). "+
		"At saturation the key costs Baton about 150 µs of CPU per call more than generate without it (about 275 against 130 µs): per call, from a CPU profile, the journal's fdatasync about 23 µs of system time, the indexer about 20 µs, hashing the body (bytes and canonical JSON, for the 422 on a reused key) about 23 µs, waking the two feed subscribers about 13 µs, the writer and the append's queue about 20 µs; that work, not the disk, is the added latency of the saturated row. "+
		"Later that day the writer stopped waiting behind the running fdatasync (one syncer's fdatasync now covers every frame written before it starts: the store benchmark at 16 writers from about 23,600 to 37,000 appends/s) and the indexer waits for 32 events, up to 100 ms, before a commit: Baton's CPU per key call went from about 510 to 480 µs at 16 paced callers and from 259 to 233 to 245 µs at saturation; the key's p99 added at 16 callers was then +1.53 to +1.81 ms paced over six runs (+1.63 and +1.79 ms in two runs before the change, the same spread) and +1.99 to +2.65 ms at saturation over six. Then the canonical form (`domain.CanonicalJSON`, which the ledger's hash chain uses too) took one decode instead of a token walk, and the key's body check no second decode of its own (`BenchmarkCanonicalJSON`: 4.4 against 7.2 µs, 62 against 142 allocations).\n")
	return b.String()
}

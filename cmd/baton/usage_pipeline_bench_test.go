package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/projections"
)

// BenchmarkUsagePipeline is what serve spends on a model call's usage
// record after the answer has gone out: the writer's batch, the embedded
// store's append and index, and every feed follower serve runs (read
// models, gateway state, transparency log) reading it. It reports the
// process's CPU time a record (cpu-ns/op); the wall time includes the
// writer's window.
func BenchmarkUsagePipeline(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := b.TempDir()
	store, err := bolt.Open(data, bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	proj, err := openReadModels(ctx, data, storeBolt, store, zerolog.Nop(), projections.NewHandoffs(), projections.Keys{}, projections.WebhookDeliveries{})
	if err != nil {
		b.Fatal(err)
	}
	defer proj.Close()
	tl, err := translog.Open(filepath.Join(data, translog.FileName), store, translog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	budgets := gateway.NewBudgets(nil)
	follower := &gateway.Follower{Store: store, Appliers: []gateway.Applier{budgets}}
	done := make(chan struct{}, 3)
	for _, run := range []func(context.Context) error{proj.Run, follower.Run, tl.Run} {
		go func() { _ = run(ctx); done <- struct{}{} }()
	}
	w := gateway.NewUsageWriter(store, func(_ uuid.UUID, _ gateway.UsageRecord, err error) { b.Error(err) })
	cost := 0.000012
	rec := gateway.UsageRecord{Tenant: "t_bench", KeyID: "k_bench", Front: "chat.completions", Model: "bench-upstream:echo-fast",
		Provider: "bench-upstream", Usage: gateway.Usage{InputTokens: 12, OutputTokens: 9}, CostUSD: &cost, LatencyMs: 1,
		Outcome: "ok", RequestID: "req_0123456789abcdef"}
	worst := 0.01
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		r, err := budgets.Reserve(ctx, rec.Tenant, rec.Model, &worst)
		if err != nil {
			b.Fatal(err)
		}
		id := r.UsageID()
		rec.At = time.Now().UTC()
		r.Settle(&cost, id, rec.At)
		w.Record(id, rec)
	}
	w.Close()
	head, err := store.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for follower.Position().Less(head) || proj.Checkpoint().Less(head) || tl.Position().Less(head) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	cancel()
	for range 3 {
		<-done
	}
}

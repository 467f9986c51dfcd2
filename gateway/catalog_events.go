package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// The catalog's changes are events in one stream, so every replica that
// follows the store sees the same catalog: what each provider listed at its
// last sync, and each model's last health probe.
const (
	CatalogStream           = "catalog"
	EventModelsSynced       = "ModelsSynced"
	EventModelHealthChecked = "ModelHealthChecked"
)

// ModelsSynced is one provider's model list as pulled by a sync.
type ModelsSynced struct {
	Provider string    `json:"provider"`
	OK       bool      `json:"ok"`
	Error    string    `json:"error,omitempty"` // the public upstream error when !OK
	Models   []string  `json:"models"`          // model names the provider listed
	SyncedAt time.Time `json:"syncedAt"`
}

// HealthChecked is one probe of one model.
type HealthChecked struct {
	ID        string    `json:"id"` // <provider>:<model>
	OK        bool      `json:"ok"`
	LatencyMs int64     `json:"latencyMs"`
	TestedAt  time.Time `json:"testedAt"`
	Error     string    `json:"error,omitempty"`
}

// appendCatalog appends one catalog event. The catalog stream's events
// depend on no earlier event (each one states a fact as of its time), so
// the expectation is only "first" or "not first".
func appendCatalog(ctx context.Context, store eventstore.Store, typ string, v any, md eventstore.Metadata) (eventstore.RecordedEvent, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return eventstore.RecordedEvent{}, err
	}
	ev := eventstore.NewEvent(typ, data, md)
	res, err := appendUnordered(ctx, store, CatalogStream, ev)
	if err != nil {
		return eventstore.RecordedEvent{}, err
	}
	return eventstore.RecordedEvent{StreamID: CatalogStream, Revision: res.NextRevision, Position: res.Position, EventData: ev}, nil
}

// appendUnordered appends to a stream whose events do not depend on each
// other: the expectation is "the stream exists", or "no stream" for the
// first event, so a missing expectation never turns the check off.
func appendUnordered(ctx context.Context, store eventstore.Store, stream string, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := store.Append(ctx, stream, eventstore.StreamExists(), evs...)
	if errors.Is(err, eventstore.ErrConflict) {
		res, err = store.Append(ctx, stream, eventstore.NoStream(), evs...)
		if errors.Is(err, eventstore.ErrConflict) {
			res, err = store.Append(ctx, stream, eventstore.StreamExists(), evs...)
		}
	}
	return res, err
}

// Apply folds a catalog event into the catalog. Events of other streams
// are ignored, so a follower of the whole feed can hand it everything.
// Applying an event twice leaves the catalog as applying it once.
func (c *Catalog) Apply(ev eventstore.RecordedEvent) error {
	if ev.StreamID != CatalogStream {
		return nil
	}
	switch ev.Type {
	case EventModelsSynced:
		var s ModelsSynced
		if err := json.Unmarshal(ev.Data, &s); err != nil {
			return fmt.Errorf("gateway: catalog event %s: %w", ev.ID, err)
		}
		c.applySync(s)
	case EventModelHealthChecked:
		var h HealthChecked
		if err := json.Unmarshal(ev.Data, &h); err != nil {
			return fmt.Errorf("gateway: catalog event %s: %w", ev.ID, err)
		}
		c.applyHealth(h)
	}
	return nil
}

// aliasListed reports whether an alias (claude-haiku-4-5,
// claude-3-5-haiku-latest, claude-sonnet-4-0) stands for a dated model the
// provider lists (claude-haiku-4-5-20251001, claude-3-5-haiku-20241022,
// claude-sonnet-4-20250514): Anthropic's model list holds the dated ids
// only, and calls by alias work.
func aliasListed(name string, listed []string) bool {
	bases := []string{name}
	for _, suffix := range []string{"-latest", "-0"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			bases = append(bases, base)
		}
	}
	for _, l := range listed {
		for _, base := range bases {
			date, ok := strings.CutPrefix(l, base+"-")
			if ok && len(date) == 8 && strings.Trim(date, "0123456789") == "" {
				return true
			}
		}
	}
	return false
}

// applySync records which models a provider listed. It never touches a
// price: prices come from the built-in table and the providers file (its
// pricing object included) when the catalog is built, and an event carries
// none, so an override stays in force across syncs, and a replica that
// reads the event ends with the prices of the replica that synced. A model
// the sync discovers is unpriced (but a dated snapshot: snapshotLocked).
func (c *Catalog) applySync(s ModelsSynced) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.providers[s.Provider]
	if p == nil {
		return // a provider this replica is not configured with
	}
	// Every replica, and a restart, applies the same events in whatever
	// order they reach it (syncs race): what results must not depend on
	// it. Which models are listed is the newest successful sync's word.
	if prev, ok := c.syncs[s.Provider]; !ok || !prev.SyncedAt.After(s.SyncedAt) {
		c.syncs[s.Provider] = s
	}
	if !s.OK {
		return // a failed sync says nothing about the models
	}
	if prev, ok := c.lists[s.Provider]; ok && prev.SyncedAt.After(s.SyncedAt) {
		return // an older list: the newest one's word stands
	}
	c.lists[s.Provider] = s
	listed := make(map[string]bool, len(s.Models))
	for _, name := range s.Models {
		if !modelName(name) {
			continue // no model (a list recorded before distinctNames refused it)
		}
		listed[name] = true
		if id := s.Provider + ":" + name; c.models[id] == nil {
			c.discoverLocked(p, id, name)
		}
	}
	for id, m := range c.models {
		if m.Provider != s.Provider {
			continue
		}
		in := listed[m.Model] || aliasListed(m.Model, s.Models)
		m.Listed = &in
		switch {
		case !m.Discovered:
			// Declared (built in, or the providers file's): kept, and out
			// of the modes while its provider does not list it.
			m.Available = m.Configured && in
		case !in && !c.foundSinceLocked(id):
			// Known only from a sync or a probe, and the provider's newest
			// list no longer names it: no longer offered (a probe that
			// finds it served brings it back).
			delete(c.models, id)
		}
	}
}

// foundSinceLocked reports whether a probe found model id served after its
// provider's newest successful list (or with no list yet): its word on the
// model is then the newer.
func (c *Catalog) foundSinceLocked(id string) bool {
	at, ok := c.probedOK[id]
	if !ok {
		return false
	}
	prov, _, _ := strings.Cut(id, ":")
	l, listed := c.lists[prov]
	return !listed || at.After(l.SyncedAt)
}

// discoverLocked adds a model known only from a sync or a probe.
func (c *Catalog) discoverLocked(p Provider, id, name string) *Model {
	m := &Model{ID: id, Object: "model", OwnedBy: p.Name(), Provider: p.Name(), Kind: p.Kind(), Model: name,
		Modes: []string{}, Configured: p.Configured(), Available: p.Configured(), Discovered: true,
		Description: "listed by the provider; capabilities unknown, no price in Baton's table"}
	if l, ok := c.lists[p.Name()]; ok {
		in := slices.Contains(l.Models, name)
		m.Listed = &in
	}
	c.snapshotLocked(m)
	c.healthLocked(m) // probed before the list came
	c.models[id] = m
	return m
}

func (c *Catalog) applyHealth(h HealthChecked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// In any order the events come: a model is added once a probe found it
	// served after its provider's newest list (a failed probe of a typo
	// adds nothing), and its health is its newest probe's.
	if prev, ok := c.probes[h.ID]; !ok || h.TestedAt.After(prev.TestedAt) {
		c.probes[h.ID] = h
	}
	if at, ok := c.probedOK[h.ID]; h.OK && (!ok || h.TestedAt.After(at)) {
		c.probedOK[h.ID] = h.TestedAt
	}
	m := c.models[h.ID]
	if m == nil {
		if !c.foundSinceLocked(h.ID) {
			return
		}
		prov, name, _ := strings.Cut(h.ID, ":")
		p := c.providers[prov]
		if p == nil || !modelName(name) {
			return
		}
		m = c.discoverLocked(p, h.ID, name)
	}
	c.healthLocked(m)
}

// snapshotLocked gives m, a model a sync or a probe found, the price and
// capabilities of the alias the catalog declares that it is a dated
// snapshot of (claude-sonnet-4-5-20250929 of claude-sonnet-4-5): an
// Anthropic alias points at its dated snapshot, and the snapshots of one
// model share its price. Of the anthropic kind only: OpenAI priced dated
// snapshots apart from their alias (gpt-4o-2024-05-13 above gpt-4o). No
// modes: the alias is what the modes route to. Prices stay configuration:
// each replica takes its own catalog's alias price.
func (c *Catalog) snapshotLocked(m *Model) {
	if m.Kind != "anthropic" {
		return
	}
	var alias *Model
	for _, a := range c.models {
		if a.Provider == m.Provider && !a.Discovered && aliasListed(a.Model, []string{m.Model}) && (alias == nil || a.ID < alias.ID) {
			alias = a // of two aliases (claude-sonnet-4-0, -latest), the same one on every replica
		}
	}
	if alias == nil {
		return
	}
	m.Pricing, m.HasPricing = alias.Pricing, alias.HasPricing
	m.ContextTokens, m.MaxOutputTokens = alias.ContextTokens, alias.MaxOutputTokens
	m.SupportsJSON, m.SupportsTools = alias.SupportsJSON, alias.SupportsTools
	m.Description = "a dated snapshot of " + alias.ID + ", which points at it: priced and described as it"
}

// healthLocked sets m's health to its newest probe, if it was probed.
func (c *Catalog) healthLocked(m *Model) {
	h, ok := c.probes[m.ID]
	if !ok || m.Health.TestedAt != nil && m.Health.TestedAt.After(h.TestedAt) {
		return
	}
	at, lat := h.TestedAt.UTC(), h.LatencyMs
	m.Health = Health{OK: h.OK, TestedAt: &at, LatencyMs: &lat}
}

// Provider returns a provider by name.
func (c *Catalog) Provider(name string) Provider {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.providers[name]
}

// Providers returns every provider, sorted by name.
func (c *Catalog) Providers() []Provider {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Provider, 0, len(c.providers))
	for _, p := range c.providers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// LastSync returns a provider's last sync, if any.
func (c *Catalog) LastSync(provider string) (ModelsSynced, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.syncs[provider]
	return s, ok
}

// SyncResult is what a sync did for one provider.
type SyncResult struct {
	Provider string   `json:"provider"`
	OK       bool     `json:"ok"`
	Skipped  string   `json:"skipped,omitempty"` // why the provider was not asked
	Error    string   `json:"error,omitempty"`
	Listed   int      `json:"listed"`
	Added    []string `json:"added"`   // ids new to the catalog (unpriced)
	Missing  []string `json:"missing"` // known ids the provider no longer lists
}

// Sync pulls every configured provider's model list (or only's, when
// given: names of providers the catalog has), records each as an event and
// applies it. Providers are asked concurrently; one failing does not stop
// the others.
func (c *Catalog) Sync(ctx context.Context, store eventstore.Store, md eventstore.Metadata, only ...string) ([]SyncResult, error) {
	provs := c.Providers()
	if len(only) > 0 {
		provs = slices.DeleteFunc(provs, func(p Provider) bool { return !slices.Contains(only, p.Name()) })
	}
	out := make([]SyncResult, len(provs))
	errs := make([]error, len(provs))
	var wg sync.WaitGroup
	for i, p := range provs {
		out[i] = SyncResult{Provider: p.Name(), Added: []string{}, Missing: []string{}}
		switch {
		case p.Kind() == "local":
			out[i].Skipped = "development provider: its one model is built in"
			continue
		case !p.Configured():
			out[i].Skipped = "not configured (no API key)"
			continue
		}
		wg.Add(1)
		go func(i int, p Provider) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			names, err := p.ListModels(cctx)
			names = distinctNames(names)
			ev := ModelsSynced{Provider: p.Name(), OK: err == nil, Models: names, SyncedAt: time.Now().UTC().Truncate(time.Microsecond)}
			if ev.Models == nil {
				ev.Models = []string{}
			}
			if err != nil {
				ev.Error = publicError(err)
			}
			before := c.idsOf(p.Name())
			rec, aerr := appendCatalog(ctx, store, EventModelsSynced, ev, md)
			if ev.OK && errors.Is(aerr, eventstore.ErrTooLarge) {
				// A list longer than one event holds: a failed sync, which
				// changes no model, not an error of every provider's sync.
				ev.OK, ev.Models = false, []string{}
				ev.Error = fmt.Sprintf("the provider listed %d models, more than one sync can record (%v)", len(names), aerr)
				names = nil
				rec, aerr = appendCatalog(ctx, store, EventModelsSynced, ev, md)
			}
			if aerr != nil {
				errs[i] = aerr
				return
			}
			c.Apply(rec)
			r := &out[i]
			r.OK, r.Error, r.Listed = ev.OK, ev.Error, len(names)
			if !ev.OK {
				return
			}
			listed := map[string]bool{}
			for _, n := range names {
				listed[n] = true
				if !before[p.Name()+":"+n] {
					r.Added = append(r.Added, p.Name()+":"+n)
				}
			}
			for id := range before {
				// An alias of a listed dated id is not missing (applySync
				// keeps it available).
				if name := strings.TrimPrefix(id, p.Name()+":"); !listed[name] && !aliasListed(name, names) {
					r.Missing = append(r.Missing, id)
				}
			}
			sort.Strings(r.Added)
			sort.Strings(r.Missing)
		}(i, p)
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// distinctNames is a provider's list without repeats, in its order (a list
// that names a model twice lists it once), and without names no model has
// (modelName: blank, white space, a control character): added to the
// catalog, "x\ny" or a bidi override would read as another model's name.
func distinctNames(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, n := range names {
		if modelName(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func (c *Catalog) idsOf(provider string) map[string]bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[string]bool{}
	for id, m := range c.models {
		if m.Provider == provider {
			out[id] = true
		}
	}
	return out
}

// publicError is an error as callers may see it.
func publicError(err error) string {
	var ue *UpstreamError
	if errors.As(err, &ue) {
		return ue.Public()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return "failed"
}

// ProbeTimeout bounds one health probe.
const ProbeTimeout = 20 * time.Second

// Probe checks one model with the cheapest call there is (one token out),
// records the result as an event and applies it.
func (c *Catalog) Probe(ctx context.Context, store eventstore.Store, id string, md eventstore.Metadata) (HealthChecked, error) {
	p, m, err := c.Resolve(id)
	if err != nil {
		return HealthChecked{}, err
	}
	h := HealthChecked{ID: m.ID}
	if !p.Configured() {
		// Not a verdict on the model: another replica may have the key.
		// Answered, not recorded, so that it does not take the model out of
		// the modes everywhere.
		h.Error = "provider not configured on this replica (no API key); nothing recorded"
		h.TestedAt = time.Now().UTC().Truncate(time.Microsecond)
		return h, nil
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	start := time.Now()
	_, perr := p.Complete(pctx, Request{Model: m.Model, MaxTokens: 1,
		Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "ping"}}}}})
	cancel()
	h.LatencyMs, h.TestedAt, h.OK = time.Since(start).Milliseconds(), time.Now().UTC().Truncate(time.Microsecond), perr == nil
	if perr != nil {
		if ctx.Err() != nil {
			return HealthChecked{}, ctx.Err() // the caller left: no verdict on the model
		}
		h.Error = publicError(perr)
	}
	rec, err := appendCatalog(ctx, store, EventModelHealthChecked, h, md)
	if err != nil {
		return HealthChecked{}, err
	}
	c.Apply(rec)
	return h, nil
}

package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	"github.com/tidwall/gjson"
)

// Admin model endpoints: sync, health, route preview, infrastructure.
// They speak the OpenAI error shape, as /v1/models does.

const (
	defaultBatchLimit = 20
	maxBatchLimit     = 200
	batchConcurrency  = 4
	defaultRoutes     = 5
)

func (s *Server) eventMeta(r *http.Request) eventstore.Metadata {
	p := principalOf(r.Context())
	return eventstore.Metadata{Tenant: p.Tenant, Actor: p.Actor(), RequestID: RequestID(r.Context())}
}

// decodeAdmin decodes an admin model route's body into dst, a pointer to
// a struct, an empty one being no fields when optional, and refuses a
// name the struct does not have (why says what the route reads): ignored,
// a misspelt or misplaced field would be done without, and a batch's
// {"provider":"oa"} probed every provider's models.
func decodeAdmin(w http.ResponseWriter, r *http.Request, limit int64, dst any, optional bool, op, why string) ([]byte, error) {
	body, err := readBody(w, r, limit)
	if err != nil {
		return nil, err
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return body, nil
	}
	if err := decodeBody(body, dst); err != nil {
		return nil, err
	}
	return body, unknownAsCode(refuseUnknown(op, body, jsonFieldNames(reflect.TypeOf(dst).Elem()), why))
}

// unknownAsCode is err, an unknown field's refusal, with unknown_field as
// its code: OpenAI's error shape has one code and no field errors, and
// validation_failed there said less than duplicate_field does.
func unknownAsCode(err error) error {
	var e *domain.Error
	if errors.As(err, &e) {
		e.Code = "unknown_field"
	}
	return err
}

func (s *Server) syncModels(w http.ResponseWriter, r *http.Request) {
	q := struct {
		Provider *string `json:"provider"`
	}{}
	if _, err := decodeAdmin(w, r, s.maxBody, &q, true, "models.sync", "a sync's body has provider, or is empty for every provider; nothing was synced"); err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	var only []string
	if q.Provider != nil {
		if s.catalog.Provider(*q.Provider) == nil {
			s.writeErrorAs(w, r, openaiErrors, badRequest("provider", "no provider is named %q; GET /v1/models/infrastructure lists them", *q.Provider))
			return
		}
		only = []string{*q.Provider}
	}
	results, err := s.catalog.Sync(r.Context(), s.store, s.eventMeta(r), only...)
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, catalogStoreError(err))
		return
	}
	synced, failed := 0, 0
	for _, res := range results {
		switch {
		case res.Skipped != "":
		case res.OK:
			synced++
		default:
			failed++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "catalog.sync", "syncedAt": time.Now().UTC(), "providers": results,
		"synced": synced, "failed": failed, "models": len(s.catalog.List()),
	})
}

// catalogStoreError is err with advice true of the routes that record the
// catalog's events (sync, probes): a retry is safe without a key, as a
// sync or a probe recorded twice says what one does.
func catalogStoreError(err error) error {
	return keylessStoreError(err, "the catalog's event (a sync's list, a probe's result) may or may not have been recorded. Retry in a moment: recorded twice, it says what it says once.")
}

// keylessStoreError is err, a store's failure, with advice true of a route
// that takes no Idempotency-Key: the store's own errors tell a client to
// retry with the same key. unanswered says what a write the store did not
// answer may have left, and what to do.
func keylessStoreError(err error, unanswered string) error {
	var e *domain.Error
	switch {
	case errors.Is(err, eventstore.ErrUnavailable):
		e = domain.E("store", domain.KindUnavailable, "store_unavailable", "The event store did not answer; %s", unanswered)
		e.RetryAfter = 1
	case errors.Is(err, eventstore.ErrFull):
		e = domain.E("store", domain.KindUnavailable, "store_unavailable", "The ledger store's disk is full; nothing was recorded. Retry once space is freed.")
		e.RetryAfter = 5
	case errors.Is(err, eventstore.ErrFailed), errors.Is(err, eventstore.ErrClosed):
		e = domain.E("store", domain.KindUnavailable, "store_unavailable", "The ledger store cannot take this request now; nothing was recorded. Retry later.")
	default:
		return err
	}
	return e
}

// healthResult is one probe as the admin endpoints report it.
type healthResult struct {
	ID        string    `json:"id"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	OK        bool      `json:"ok"`
	LatencyMs int64     `json:"latencyMs"`
	TestedAt  time.Time `json:"testedAt"`
	Error     string    `json:"error,omitempty"`
}

func toHealthResult(h gateway.HealthChecked) healthResult {
	prov, name, _ := strings.Cut(h.ID, ":")
	return healthResult{ID: h.ID, Provider: prov, Model: name, OK: h.OK, LatencyMs: h.LatencyMs, TestedAt: h.TestedAt, Error: h.Error}
}

func (s *Server) healthModel(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Provider string `json:"provider"`
		Model    string `json:"model"`
	}
	if _, err := decodeAdmin(w, r, s.maxBody, &q, false, "models.health", "a probe's body has model and provider; nothing was probed"); err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	id := q.Model
	switch {
	case q.Model == "":
		s.writeErrorAs(w, r, openaiErrors, badRequest("model", "model is required: a model name with provider, or a <provider>:<model> id"))
		return
	case q.Provider != "":
		// The model may be a bare name with ':' in it
		// (meta-llama/llama-3:free); only a known provider before the
		// first ':' makes it an id.
		if p, _, ok := strings.Cut(q.Model, ":"); ok && p != q.Provider && s.catalog.Provider(p) != nil {
			s.writeErrorAs(w, r, openaiErrors, badRequest("model", "model %q names provider %s, not %s", q.Model, p, q.Provider))
			return
		}
		id = q.Provider + ":" + strings.TrimPrefix(q.Model, q.Provider+":")
	}
	h, err := s.catalog.Probe(r.Context(), s.store, id, s.eventMeta(r))
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, catalogStoreError(err))
		return
	}
	writeJSON(w, http.StatusOK, toHealthResult(h))
}

func (s *Server) healthBatch(w http.ResponseWriter, r *http.Request) {
	q := struct {
		ConfiguredOnly *bool `json:"configuredOnly"`
		Limit          *int  `json:"limit"`
	}{}
	if _, err := decodeAdmin(w, r, s.maxBody, &q, true, "models.health.batch", "a batch's body has configuredOnly and limit, and probes the least recently probed models of every provider; nothing was probed"); err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	configuredOnly, limit := true, defaultBatchLimit
	if q.ConfiguredOnly != nil {
		configuredOnly = *q.ConfiguredOnly
	}
	if q.Limit != nil {
		if *q.Limit < 1 || *q.Limit > maxBatchLimit {
			s.writeErrorAs(w, r, openaiErrors, badRequest("limit", "limit must be between 1 and %d", maxBatchLimit))
			return
		}
		limit = *q.Limit
	}
	// Least recently probed first, so repeated batches cover the catalog.
	var ids []string
	models := s.catalog.List()
	sort.SliceStable(models, func(i, j int) bool {
		a, b := models[i].Health.TestedAt, models[j].Health.TestedAt
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		}
		return a.Before(*b)
	})
	skipped, notConfigured := 0, 0
	for _, m := range models {
		switch {
		case configuredOnly && !m.Configured:
			skipped++
			continue
		case !m.Configured:
			// A probe here would say nothing of the model and record
			// nothing (another replica may hold the key): it is not
			// unhealthy, and, never probed, it would sort first every time
			// and take the places of the models that can be probed.
			notConfigured++
			continue
		}
		if len(ids) == limit {
			skipped++
			continue
		}
		ids = append(ids, m.ID)
	}
	out := make([]healthResult, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, batchConcurrency)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-r.Context().Done():
				errs[i] = r.Context().Err()
				return
			}
			defer func() { <-sem }()
			h, err := s.catalog.Probe(r.Context(), s.store, id, s.eventMeta(r))
			out[i], errs[i] = toHealthResult(h), err
		}()
	}
	wg.Wait()
	healthy, unhealthy := 0, 0
	for i, err := range errs {
		if err != nil {
			s.writeErrorAs(w, r, openaiErrors, catalogStoreError(err))
			return
		}
		if out[i].OK {
			healthy++
		} else {
			unhealthy++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": out, "checked": len(out), "healthy": healthy, "unhealthy": unhealthy,
		"skipped": skipped, "notConfigured": notConfigured, "configuredOnly": configuredOnly, "limit": limit, "concurrency": batchConcurrency,
	})
}

func (s *Server) routePreview(w http.ResponseWriter, r *http.Request) {
	q := struct {
		Mode     string        `json:"mode"`
		Strategy string        `json:"strategy"`
		Limit    *int          `json:"limit"`
		Needs    gateway.Needs `json:"needs"`
	}{}
	body, err := decodeAdmin(w, r, s.maxBody, &q, true, "models.route.preview", "a preview's body has mode, strategy, limit and needs")
	if err == nil {
		// A need misspelt would rank models that lack it.
		if n := gjson.GetBytes(body, "needs"); n.IsObject() {
			err = unknownAsCode(refuseUnknownAt("models.route.preview", "/needs", []byte(n.Raw), jsonNames[gateway.Needs](), "needs has json, tools and contextTokens"))
		}
	}
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	if q.Mode == "" {
		q.Mode = gateway.ModeAuto
	}
	if !gateway.IsMode(q.Mode) {
		s.writeErrorAs(w, r, openaiErrors, badRequest("mode", "mode must be one of %s", strings.Join(gateway.Modes, ", ")))
		return
	}
	if q.Strategy != "" && q.Strategy != gateway.StrategyCost && q.Strategy != gateway.StrategyLatency {
		s.writeErrorAs(w, r, openaiErrors, badRequest("strategy", "strategy must be cost or latency (or absent: the mode's own order)"))
		return
	}
	limit := defaultRoutes
	if q.Limit != nil {
		if *q.Limit < 1 || *q.Limit > maxBatchLimit {
			s.writeErrorAs(w, r, openaiErrors, badRequest("limit", "limit must be between 1 and %d", maxBatchLimit))
			return
		}
		limit = *q.Limit
	}
	if q.Needs.ContextTokens < 0 {
		s.writeErrorAs(w, r, openaiErrors, badRequest("needs/contextTokens", "must not be negative"))
		return
	}
	routes, excluded, err := s.catalog.Routes(q.Mode, q.Strategy, q.Needs)
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	total := len(routes)
	routes = routes[:min(limit, len(routes))]
	if excluded == nil {
		excluded = []gateway.Excluded{}
	}
	strategy := q.Strategy
	if strategy == "" {
		strategy = "mode"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "route.preview", "mode": q.Mode, "strategy": strategy, "needs": q.Needs, "limit": limit,
		"routes": routes, "candidates": total, "excluded": excluded,
	})
}

func (s *Server) infrastructure(w http.ResponseWriter, r *http.Request) {
	models := s.catalog.List()
	type provInfo struct {
		Name       string     `json:"name"`
		Kind       string     `json:"kind"`
		Configured bool       `json:"configured"` // has what it needs to call (a key, or none needed)
		KeySet     bool       `json:"keySet"`     // never the key itself
		Models     int        `json:"models"`
		LastSync   *time.Time `json:"lastSyncAt"`
		SyncOK     *bool      `json:"lastSyncOk"`
	}
	var provs []provInfo
	for _, p := range s.catalog.Providers() {
		pi := provInfo{Name: p.Name(), Kind: p.Kind(), Configured: p.Configured(), KeySet: keySet(p)}
		for _, m := range models {
			if m.Provider == p.Name() {
				pi.Models++
			}
		}
		if sy, ok := s.catalog.LastSync(p.Name()); ok {
			at, ok := sy.SyncedAt, sy.OK
			pi.LastSync, pi.SyncOK = &at, &ok
		}
		provs = append(provs, pi)
	}
	priced, tested, healthy, configured := 0, 0, 0, 0
	unpriced := []string{}
	for _, m := range models {
		if m.HasPricing {
			priced++
		} else {
			unpriced = append(unpriced, m.ID)
		}
		if !m.Configured {
			// Never probed here (a probe would say nothing of it): health
			// is of the models this replica can call.
			continue
		}
		configured++
		if m.Health.TestedAt != nil {
			tested++
			if m.Health.OK {
				healthy++
			}
		}
	}
	ratio := func(n, of int) float64 {
		if of == 0 {
			return 0
		}
		return math.Round(float64(n)/float64(of)*1000) / 1000
	}
	recommended := map[string]any{}
	for _, mode := range gateway.Modes {
		routes, _, err := s.catalog.Routes(mode, "", gateway.Needs{})
		if err != nil {
			s.writeErrorAs(w, r, openaiErrors, err)
			return
		}
		ids := []string{}
		for _, rt := range routes[:min(3, len(routes))] {
			ids = append(ids, rt.ID)
		}
		recommended[mode] = ids
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object":    "infrastructure",
		"providers": provs,
		"models":    map[string]any{"total": len(models), "configured": configured},
		"pricing":   map[string]any{"priced": priced, "unpriced": unpriced, "coverage": ratio(priced, len(models))},
		"health": map[string]any{"tested": tested, "healthy": healthy, "unhealthy": tested - healthy, "coverage": ratio(tested, configured),
			"note": "of the models whose provider is configured on this replica: coverage is the share with at least one probe; POST /v1/models/health/batch probes more"},
		"recommendedRoutes": recommended,
	})
}

// keySet reports whether a provider holds a credential, without reading it.
func keySet(p gateway.Provider) bool {
	if k, ok := p.(interface{ HasKey() bool }); ok {
		return k.HasKey()
	}
	return false
}

// ---- budgets (admin, problem+json) ----

// storeUnanswered is err, told as the store being unavailable when it is
// the end of the time given to the store (not the client's leaving): a
// store that does not answer is not a failure of Baton's.
func storeUnanswered(r *http.Request, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		return fmt.Errorf("%w: %w", eventstore.ErrUnavailable, err)
	}
	return err
}

// budgetTenant reads the tenant of a budget path; a malformed name is a
// 404, as an unknown route would be.
func (s *Server) budgetTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant := mux.Vars(r)["tenant"]
	if !domain.ValidTenant(tenant) {
		s.writeError(w, r, domain.E("budgets", domain.KindNotFound, "not_found", "No tenant named %s; tenant names are 1-63 lowercase letters, digits, '_' or '-'.", tenant))
		return "", false
	}
	// A budget set on a misspelt tenant would hold nobody's calls, and
	// leave the tenant meant without a limit: told now, as a console
	// link's tenant is.
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	known, err := s.ledger.Keys.TenantKnown(ctx, tenant)
	err = storeUnanswered(r, err)
	if err == nil && !known {
		err = domain.E("budgets", domain.KindNotFound, "not_found",
			"No tenant named %s: no key was ever made for it; check its spelling, or make the tenant's first key (POST /v1/admin/keys).", tenant)
	}
	if err != nil {
		s.writeError(w, r, err)
		return "", false
	}
	return tenant, true
}

func (s *Server) getBudget(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.budgetTenant(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	st, err := s.budgets.Current(ctx, tenant)
	if err != nil {
		s.writeError(w, r, keylessStoreError(fmt.Errorf("budget: %w", storeUnanswered(r, err)), "the limits may or may not have been recorded. Retry the PUT: it sets the same limits again, and takes no Idempotency-Key."))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) putBudget(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.budgetTenant(w, r)
	if !ok {
		return
	}
	var q gateway.Limits
	body, ok := s.readJSON(w, r, &q)
	if !ok {
		return
	}
	// A PUT replaces both limits, a field left out being no limit: a name
	// misspelled ("daily_usd") would lift them without a word.
	var unknown *string // a name may be "", which is unknown too
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
		if k.Str != "dailyUsd" && k.Str != "monthlyUsd" {
			unknown = &k.Str
			return false
		}
		return true
	})
	if unknown != nil {
		s.writeError(w, r, badRequest("/"+domain.PointerToken(*unknown), "unknown field %q: a budget has dailyUsd and monthlyUsd (a PUT sets both; one left out, or null, is no limit)", *unknown))
		return
	}
	for name, v := range map[string]*float64{"/dailyUsd": q.DailyUSD, "/monthlyUsd": q.MonthlyUSD} {
		if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
			s.writeError(w, r, badRequest(name, "a limit is a non-negative number of USD, or null for none"))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	if err := s.budgets.SetBudget(ctx, s.store, gateway.BudgetSet{Tenant: tenant, Limits: q}, s.eventMeta(r)); err != nil {
		// Whether the limits were recorded is then unknown, as for any
		// write the store does not answer (a PUT is safe to retry).
		s.writeError(w, r, keylessStoreError(fmt.Errorf("budget: %w", storeUnanswered(r, err)), "the limits may or may not have been recorded. Retry the PUT: it sets the same limits again, and takes no Idempotency-Key."))
		return
	}
	writeJSON(w, http.StatusOK, s.budgets.Status(tenant))
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// EventBudgetSet is the type of budget events, one stream per tenant.
const EventBudgetSet = "BudgetSet"

// BudgetStream is where a tenant's budget settings go.
func BudgetStream(tenant string) string { return "budget-" + tenant }

// Limits are a tenant's spending limits in USD; nil means no limit.
type Limits struct {
	DailyUSD   *float64 `json:"dailyUsd"`
	MonthlyUSD *float64 `json:"monthlyUsd"`
}

// BudgetSet is a tenant's new limits.
type BudgetSet struct {
	Tenant string `json:"tenant"`
	Limits
}

// WorstTokens bounds a request's tokens from above: every token is at least
// one byte of the text it stands for, so the byte count of the prompt (plus
// a few tokens of framing per message) bounds the input, and the output is
// bounded by the request's cap, or by the model's context when the request
// sets none, for each of the answers it asks for.
func WorstTokens(req Request, m *Model) (in, out int) {
	in = len(req.System) + 8
	if len(req.Body) > 0 {
		// A passed-through body, not decoded: its bytes bound every text in
		// it, framing included.
		in = len(req.Body)
		if req.NeedsJSON {
			in += structuredOverhead
		}
	}
	for _, msg := range req.Messages {
		in += 8
		for _, b := range msg.Content {
			in += len(b.Text) + len(b.Name) + len(b.Input) + len(b.ID) + len(b.ToolUseID) + len(b.Thinking) + 4
			in += b.images(func(img Block) int { return ImageTokens + len(img.URL) }) // not the image's bytes: providers scale it down
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Schema) + 16
	}
	if len(req.Tools) > 0 {
		in += toolsOverhead // the provider's own tool-use instructions
	}
	if req.JSONObject {
		in += len(JSONObjectInstruction) // added to the system prompt for Anthropic
	}
	if req.Output != nil {
		// The schema goes upstream too (a response format, or a forced
		// tool with the provider's own tool-use prompt around it).
		in += len(req.Output.Name) + len(req.Output.Description) + len(req.Output.Schema) + structuredOverhead
	}
	out, _ = OutputBound(req, m)
	return in, out
}

// OutputBound is the most output a request can have on a model: its cap
// (what the kind's adapter sends, where it sets one) held to the model's
// declared most output, or, when the request sets none, that most, else
// the model's context, for each of its answers. known is false when nothing bounds it (a model declared
// without its context size): out is then unknownOutputCap's guess.
func OutputBound(req Request, m *Model) (out int, known bool) {
	out = req.MaxTokens
	if m != nil {
		if k, ok := lookupKind(m.Kind); ok && k.MaxTokens != nil {
			req.Model, req.OutputLimit = m.Model, m.MaxOutputTokens
			out = k.MaxTokens(req) // what the adapter sends
		}
	}
	known = out > 0
	if m != nil && m.MaxOutputTokens > 0 && (out <= 0 || out > m.MaxOutputTokens) {
		// A cap past the model's most (a passed-through body carries the
		// client's as sent) cannot be written: the most bounds it.
		out, known = m.MaxOutputTokens, true
	}
	if out <= 0 && m != nil {
		out, known = m.ContextTokens, m.ContextTokens > 0
		if out <= 0 {
			out = unknownOutputCap // a model declared without its context size
		}
	}
	return forEachAnswer(out, req.Choices), known
}

// BilledOutputBound is the most output a call can be billed for: the
// request's bound (OutputBound) where its kind's cap bounds everything the
// model writes, else the model's context, for each answer. known is false
// when nothing bounds it.
func BilledOutputBound(req Request, m *Model) (out int, known bool) {
	if m == nil {
		return 0, false
	}
	if k, ok := lookupKind(m.Kind); ok && k.CapBoundsOutput {
		return OutputBound(req, m)
	}
	if m.ContextTokens <= 0 {
		return 0, false
	}
	return forEachAnswer(m.ContextTokens, req.Choices), true
}

// forEachAnswer is a per-answer token bound times the answers a request
// asks for (choices; 0 is one), saturating at 2^31-1: each is bounded by
// the fronts, not their product, which must not wrap.
func forEachAnswer(tokens, choices int) int {
	if n := max(choices, 1); tokens > math.MaxInt32/n {
		return math.MaxInt32
	}
	return tokens * max(choices, 1)
}

const (
	// structuredOverhead bounds the tokens a provider adds around a
	// structured-output request (Anthropic's tool-use system prompt).
	structuredOverhead = 400
	// toolsOverhead bounds the tokens a provider adds when tools are
	// offered (Anthropic documents a tool-use system prompt of about 350).
	toolsOverhead = 400
	// unknownOutputCap is the output bound for a call with no cap to a
	// model whose context size is not declared.
	unknownOutputCap = 32768
)

// WorstCost is the most a request can cost on a model: the input at the
// dearest of the input and cache-write rates (5-minute and 1-hour: a
// passed-through request may ask for either), the whole output cap at the
// output rate, at the tier the request asks for, and the web searches its
// tools allow (a tier's premium is on the tokens). Nil when the model has no
// price, or the request asks for a tier it has none for (UnpricedTier).
func WorstCost(req Request, m *Model) *float64 {
	price, tier := priceFor(req, m)
	if price == nil {
		return nil
	}
	in, out := WorstTokens(req, m)
	p := price.At(in) // a long prompt is billed at its own rates
	c := tier*(float64(in)*max(p.InputPerMTok, p.CacheWritePerMTok, p.CacheWrite1hRate())+float64(out)*p.OutputPerMTok)/1e6 +
		max(price.searchCost(req.WebSearches, req.SearchPreview), price.fileSearchCost(req.FileSearches))
	return &c
}

// LeastCost is WorstCost for the least a client can ask of req on m: one
// output token, one answer, no searches; noInput: no prompt either.
func LeastCost(req Request, m *Model, noInput bool) *float64 {
	if noInput {
		req = Request{Model: req.Model, ServiceTier: req.ServiceTier, Geo: req.Geo}
	}
	req.MaxTokens, req.Choices, req.WebSearches, req.FileSearches = 1, 1, 0, 0
	return WorstCost(req, m)
}

// UnpricedTier reports whether req asks for a capacity tier or a
// geography m's price has no rate for (Price.TierRate, Price.GeoRate): its
// cost is unknown (nil), as an unpriced model's, and a tenant with a
// budget cannot make the call.
func UnpricedTier(req Request, m *Model) bool {
	p, _ := priceFor(req, m)
	return p == nil && m != nil && m.Pricing != nil
}

// priceFor is the price a request is billed at on m and the multiple of
// its rates that the tier it asks for costs: nil when m has no price, or
// when the request asks for a tier the price has no rate for.
func priceFor(req Request, m *Model) (*Price, float64) {
	if m == nil || m.Pricing == nil {
		return nil, 0
	}
	tier, ok := m.Pricing.TierRate(req.ServiceTier)
	if !ok {
		return nil, 0
	}
	geo, ok := m.Pricing.GeoRate(req.Geo)
	if !ok {
		return nil, 0
	}
	return m.Pricing, tier * geo // the premiums stack, as Anthropic bills them
}

// BudgetError refuses a call that its tenant's budget cannot cover.
type BudgetError struct {
	Tenant      string
	Period      string // day or month; "" for an unpriced model under a budget
	LimitUSD    float64
	SpentUSD    float64
	ReservedUSD float64 // held by calls in flight
	WorstUSD    float64
	ResetAt     time.Time // when the refusing period (the later one, if both refuse) starts again
	// Also is the other period when it refuses the call too on what is
	// spent, and resets later: a call whose worst case alone is over one
	// limit is told about the other, which waiting out the first, or a
	// lower cap, does not get past (RetryAt).
	Also  *BudgetError
	Model string
	// Tier is the capacity tier with no price that refused the call
	// (Period ""), when it is not the model that has none.
	Tier string
	// AutoTier is the tier a call that named none was held at, its
	// provider's default (Caller.TierFor), when that is not the standard.
	AutoTier string
	// TierSent: the call passes its body through, so a service_tier it
	// names is sent; a translated call sends none.
	TierSent bool
	// Searches is the web searches the worst case holds for (the tools'
	// max_uses, or max_tool_calls: Request.WebSearches), when the price
	// bills them.
	Searches int
	// FileSearches is the file search calls the worst case holds for (a
	// Responses body's max_tool_calls), when the price bills them.
	FileSearches int
	// HeldOnly: what is spent leaves room for this call; the holds of calls
	// in flight do not, and they end within seconds.
	HeldOnly bool
	// Never: this call's worst case alone is over the limit; it cannot pass
	// in any period unless its token cap is lowered.
	Never bool
	// Quota: Never, and no request could fit: a call of no input and one
	// output token is over the limit too, or (generate, which has no cap
	// to lower) the task type's cap is. The limit is spent, as far as
	// calls go.
	Quota bool
	// Input: Never, and this call's input alone (one output token, one
	// answer, no searches) is over the limit, at LeastUSD: a shorter
	// prompt, not a lower cap, is what could fit.
	Input    bool
	LeastUSD float64
	// Front is the call's front (Call.Front), which names the request's
	// fields: its token cap (Cap) and the field that asks for a tier
	// (TierParam).
	Front string
	// CapParam is the request's token cap field when not the front's
	// usual one (Request.CapParam).
	CapParam string
	// Geo is the geography with no price that refused the call (Period
	// ""), when it is not the model or the tier that has none.
	Geo string
	// AutoGeo is the geography a call that named none was held at, its
	// provider's declared default (GeoFor).
	AutoGeo string
}

// TierParam is the request field that asked for the unpriced tier: a
// Messages request asks for fast mode by its speed.
func (e *BudgetError) TierParam() string {
	if e.Front == "messages" {
		return "speed"
	}
	return "service_tier"
}

// SearchCap is the request field that bounds its web searches: a
// Responses body's max_tool_calls, a Messages tool's max_uses.
func (e *BudgetError) SearchCap() string {
	if e.Front == "responses" {
		return "max_tool_calls"
	}
	return "max_uses"
}

// Cap is the name of the token cap the client can lower: the Responses
// API has no max_tokens.
func (e *BudgetError) Cap() string {
	if e.CapParam != "" {
		return e.CapParam
	}
	if e.Front == "responses" {
		return "max_output_tokens"
	}
	return "max_tokens"
}

func (e *BudgetError) Error() string {
	if e.Period == "" && e.Geo != "" {
		return fmt.Sprintf("tenant %s has a budget and inference_geo %s of model %s has no price, so its cost cannot be bounded; send the request without it (or with global)", e.Tenant, e.Geo, e.Model)
	}
	if e.Period == "" && e.Tier != "" && e.TierParam() == "speed" {
		return fmt.Sprintf("tenant %s has a budget and speed %s of model %s has no price, so its cost cannot be bounded; send the request without it (or with standard)", e.Tenant, e.Tier, e.Model)
	}
	if e.Period == "" && e.Tier != "" {
		return fmt.Sprintf("tenant %s has a budget and service_tier %s of model %s has no price, so its cost cannot be bounded; send the request without it (or with auto, default or flex)", e.Tenant, e.Tier, e.Model)
	}
	if e.Period == "" {
		return fmt.Sprintf("tenant %s has a budget and model %s has no price, so its cost cannot be bounded; use a priced model", e.Tenant, e.Model)
	}
	bound := "input bound + token cap"
	switch {
	case e.Searches > 0 && e.FileSearches > 0:
		bound += fmt.Sprintf(" + %d web or file searches (%s)", e.Searches, e.SearchCap())
	case e.Searches > 0:
		bound += fmt.Sprintf(" + %d web searches (%s)", e.Searches, e.SearchCap())
	case e.FileSearches > 0:
		bound += fmt.Sprintf(" + %d file search calls (%s)", e.FileSearches, e.SearchCap())
	}
	if e.AutoTier != "" {
		bound += AtDefaultTier(e.AutoTier, "model "+e.Model)
		if e.TierSent {
			bound += "; service_tier default is held at the standard rates"
		}
	}
	if e.AutoGeo != "" {
		bound += InDefaultGeo(e.AutoGeo, "model "+e.Model)
		if e.Front == "messages" {
			bound += " (inference_geo global runs it anywhere)"
		}
	}
	also := ""
	if a := e.Also; a != nil {
		also = fmt.Sprintf("; the %s budget of $%s is spent too ($%.6f spent, $%.6f held by calls in flight) until %s",
			periodly[a.Period], dollars(a.LimitUSD), a.SpentUSD, a.ReservedUSD, a.ResetAt.Format(time.RFC3339))
	}
	if e.Input {
		return fmt.Sprintf("this call's input alone may cost up to $%.6f (its input bound and one output token), more than the %s budget of $%s for tenant %s allows even with nothing spent; send a shorter prompt%s",
			e.LeastUSD, periodly[e.Period], dollars(e.LimitUSD), e.Tenant, also)
	}
	if e.Quota {
		return fmt.Sprintf("the %s budget of $%s for tenant %s cannot cover this call, which may cost up to $%.6f (%s), even with nothing spent; the budget resets at %s%s",
			periodly[e.Period], dollars(e.LimitUSD), e.Tenant, e.WorstUSD, bound, e.ResetAt.Format(time.RFC3339), also)
	}
	if e.Never {
		lower := e.Cap()
		if e.Searches > 0 || e.FileSearches > 0 { // the searches may be most of the worst case
			lower += " or " + e.SearchCap()
		}
		return fmt.Sprintf("this call may cost up to $%.6f (%s), more than the %s budget of $%s for tenant %s allows even with nothing spent; set a lower %s%s",
			e.WorstUSD, bound, periodly[e.Period], dollars(e.LimitUSD), e.Tenant, lower, also)
	}
	when := "the budget resets at " + e.ResetAt.Format(time.RFC3339)
	if e.HeldOnly {
		// What is spent leaves room: the calls in flight hold it, and the
		// answer's Retry-After is a second, not the reset.
		when = "the calls in flight hold the rest; retry once they end"
	}
	return fmt.Sprintf("the %s budget of $%s for tenant %s cannot cover this call: $%.6f spent, $%.6f held by calls in flight, this call may cost up to $%.6f (%s); %s",
		periodly[e.Period], dollars(e.LimitUSD), e.Tenant, e.SpentUSD, e.ReservedUSD, e.WorstUSD, bound, when)
}

var periodly = map[string]string{"day": "daily", "month": "monthly"}

// RetryAt is when the call could be tried again: the later reset of the
// periods that refuse it.
func (e *BudgetError) RetryAt() time.Time {
	if e.Also != nil && e.Also.ResetAt.After(e.ResetAt) {
		return e.Also.ResetAt
	}
	return e.ResetAt
}

// dollars is a budget's limit as set: its digits, not rounded to cents or a
// fixed count of places (a limit of $0.000001 read "$0.0000").
func dollars(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// AtDefaultTier says, in a refusal, that the worst case of a call on model
// (who names it) is held at its provider's default tier (Caller.TierFor).
func AtDefaultTier(tier, who string) string {
	return fmt.Sprintf(", at the %s tier, where %s's provider serves a call that names no service_tier", tier, who)
}

// InDefaultGeo says, in a refusal, that it is held in its provider's
// default geography (GeoFor).
func InDefaultGeo(geo, who string) string {
	return fmt.Sprintf(", in the %s, where %s's provider runs a call that names no inference_geo", geo, who)
}

// ErrBudget matches every *BudgetError.
var ErrBudget = errors.New("gateway: budget exceeded")

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

type spend struct {
	// Sums per UTC day and month, the latest few of each: a usage event
	// dated in the next period (a replica whose clock runs ahead at
	// midnight) starts that period's sum without wiping the current one.
	days, months map[string]float64
}

// keptPeriods is how many days (and months) of sums a tenant's book keeps.
const keptPeriods = 3

// maxUsageAhead is how far past this replica's clock a usage record may be
// dated and still count in its own day: within it, yesterday, today and
// tomorrow are the book's three days.
const maxUsageAhead = 24 * time.Hour

// Budgets enforces per-tenant limits. Spending comes from usage events
// (Apply), so every replica that follows the store agrees on it. Holds for
// calls in flight are this process's own unless UseStore shares them
// through the store (reserve.go).
type Budgets struct {
	mu       sync.Mutex
	limits   map[string]Limits
	spent    map[string]*spend
	holds    map[string]*holdBook  // per tenant: held worst cases and the budget stream's revision
	awaiting map[uuid.UUID]holdRef // usage event id -> the shared hold that event releases
	settled  map[uuid.UUID]bool    // usage events this replica already counted
	// unheld: per tenant, the worst cases of this replica's calls in
	// flight that were reserved while the tenant had no limits. They hold
	// nothing, but once a budget is set they count as held until they
	// settle: a budget set to stop a runaway tenant is not passed by the
	// calls already running.
	unheld map[string]float64
	now    func() time.Time
	// seen: the ids of the usage events applied lately, oldest first in
	// seenRing. A store that keeps an event's id for a retried append only
	// while it remembers it (KurrentDB's cache of recent ids, which a
	// restart clears) can store one append twice under one id: counted
	// once here.
	seen     map[uuid.UUID]struct{}
	seenRing []uuid.UUID
	seenNext int

	store   eventstore.Store // nil: holds stay in this process
	onError func(error)
	holdTTL time.Duration

	// autoFast: provider name -> the latest answers to calls that named
	// no tier, to a model with a fast rate (Caller.TierFor), learned from
	// every replica's usage events. Its own lock: read only on calls to
	// such models, never under mu.
	autoMu   sync.Mutex
	autoFast map[string]autoTierAnswers
}

// autoTierAnswers are when a provider last served a call that named no
// tier at the fast tier, and at another (the usage events' At). The
// latest of each, whatever order the events come in, so that every
// replica ends up knowing the same.
type autoTierAnswers struct{ fast, standard time.Time }

// autoTierForget is how long after a provider's last such answer at the
// fast tier one at the standard tier must come for such calls to be held
// at the standard rates again: OpenAI serves some of a priority
// project's calls at the standard tier (past its ramp rate limit, and while
// it moves a project to priority), which do not show the default changed.
const autoTierForget = time.Hour

func (a autoTierAnswers) servesFast() bool {
	return !a.fast.IsZero() && a.standard.Sub(a.fast) < autoTierForget
}

// ServesAutoFast reports whether provider serves a call that names no
// service tier at the fast tier, as its usage events (and this replica's
// settles) show: it answered such a call at the fast tier, and none at the
// standard tier autoTierForget or more after the last such. A nil
// *Budgets knows none.
func (b *Budgets) ServesAutoFast(provider string) bool {
	if b == nil {
		return false
	}
	b.autoMu.Lock()
	defer b.autoMu.Unlock()
	return b.autoFast[provider].servesFast()
}

// sawAutoTier notes that such a call to provider was served, at time at,
// at the fast tier or not, and says whether that changed ServesAutoFast.
// An answer older than what is known changes nothing.
func (b *Budgets) sawAutoTier(provider string, fast bool, at time.Time) bool {
	if b == nil {
		return false
	}
	b.autoMu.Lock()
	defer b.autoMu.Unlock()
	old := b.autoFast[provider]
	n := old
	if fast && at.After(n.fast) {
		n.fast = at
	} else if !fast && at.After(n.standard) {
		n.standard = at
	}
	if b.autoFast == nil {
		b.autoFast = map[string]autoTierAnswers{}
	}
	b.autoFast[provider] = n
	return old.servesFast() != n.servesFast()
}

// NewBudgets returns an empty budget book; now is its clock (time.Now when nil).
func NewBudgets(now func() time.Time) *Budgets {
	if now == nil {
		now = time.Now
	}
	return &Budgets{limits: map[string]Limits{}, spent: map[string]*spend{}, holds: map[string]*holdBook{},
		awaiting: map[uuid.UUID]holdRef{}, settled: map[uuid.UUID]bool{}, unheld: map[string]float64{}, now: now, holdTTL: DefaultHoldTTL,
		seen: map[uuid.UUID]struct{}{}, seenRing: make([]uuid.UUID, 0, seenUsageEvents)}
}

// seenUsageEvents is how many usage events' ids a replica remembers: at
// one event a tenant a usage window, days of a busy gateway's retries.
const seenUsageEvents = 4096

// firstSight records a usage event's id and says whether it was not seen
// lately. Under b.mu.
func (b *Budgets) firstSight(id uuid.UUID) bool {
	if _, ok := b.seen[id]; ok {
		return false
	}
	if len(b.seenRing) < seenUsageEvents {
		b.seenRing = append(b.seenRing, id)
	} else {
		delete(b.seen, b.seenRing[b.seenNext])
		b.seenRing[b.seenNext] = id
		b.seenNext = (b.seenNext + 1) % seenUsageEvents
	}
	b.seen[id] = struct{}{}
	return true
}

func periods(t time.Time) (day, month string) {
	y, m, d := t.UTC().Date()
	if p := lastPeriods.Load(); p != nil && p.y == y && p.m == m && p.d == d {
		return p.dayKey, p.monthKey
	}
	p := &dayPeriods{y: y, m: m, d: d, dayKey: t.UTC().Format("2006-01-02"), monthKey: t.UTC().Format("2006-01")}
	lastPeriods.Store(p)
	return p.dayKey, p.monthKey
}

// dayPeriods are one UTC day's keys. Every settled call books its cost
// under its day and month: the keys of the day last asked for are kept, so
// that they are not formatted again for each call.
type dayPeriods struct {
	y                int
	m                time.Month
	d                int
	dayKey, monthKey string
}

var lastPeriods atomic.Pointer[dayPeriods]

// add counts a cost at time t, in t's UTC day and month.
func (s *spend) add(t time.Time, cost float64) {
	day, month := periods(t)
	if s.days == nil {
		s.days, s.months = map[string]float64{}, map[string]float64{}
	}
	s.days[day] += cost
	s.months[month] += cost
	prune(s.days)
	prune(s.months)
}

// prune drops the earliest periods beyond the latest keptPeriods.
func prune(m map[string]float64) {
	for len(m) > keptPeriods {
		first := ""
		for k := range m {
			if first == "" || k < first {
				first = k
			}
		}
		delete(m, first)
	}
}

// at is what was spent in t's UTC day and month.
func (s *spend) at(t time.Time) (day, month float64) {
	d, m := periods(t)
	return s.days[d], s.months[m]
}

func (b *Budgets) book(tenant string) *spend {
	s := b.spent[tenant]
	if s == nil {
		s = &spend{}
		b.spent[tenant] = s
	}
	return s
}

// Apply folds a budget or usage event in; other events are ignored.
func (b *Budgets) Apply(ev eventstore.RecordedEvent) error {
	switch ev.Type {
	case EventBudgetSet, EventBudgetHeld, EventBudgetHoldRenewed, EventBudgetHoldReleased:
		return b.applyBudgetEvent(ev)
	case EventUsageRecorded, EventUsageBatchRecorded:
		return b.applyUsage(ev)
	}
	return nil
}

// applyUsage counts the records of a usage event that this replica did not
// count when it settled them. Every record is decoded before any is
// counted: an event that cannot be read whole counts nothing (a hold it
// would release expires instead).
func (b *Budgets) applyUsage(ev eventstore.RecordedEvent) error {
	all, err := UsageRecords(ev)
	if err != nil {
		return err
	}
	// The calls this replica settled were counted then: their records
	// are not decoded, only forgotten (one lock for the whole event).
	others := all[:0]
	b.mu.Lock()
	if !b.firstSight(ev.ID) {
		b.mu.Unlock()
		return nil
	}
	for _, e := range all {
		if b.settled[e.ID] {
			delete(b.settled, e.ID)
			continue
		}
		others = append(others, e)
	}
	b.mu.Unlock()
	if len(others) == 0 {
		return nil
	}
	recs := make([]UsageRecord, len(others))
	for i, e := range others {
		if err := json.Unmarshal([]byte(e.Raw), &recs[i]); err != nil {
			return fmt.Errorf("gateway: usage event %s: record %s: %w", ev.ID, e.ID, err)
		}
	}
	for i, e := range others {
		b.applyRecord(ev, e.ID, recs[i])
	}
	return nil
}

// applyRecord counts one call's record (id, rec) of usage event ev.
func (b *Budgets) applyRecord(ev eventstore.RecordedEvent, id uuid.UUID, u UsageRecord) {
	b.mu.Lock()
	ref, releases := b.awaiting[id]
	b.mu.Unlock()
	at := u.At // the moment the settling replica counted it: every replica counts it in the same day
	if at.IsZero() {
		at = ev.Metadata.RecordedAt
	}
	if at.IsZero() { // neither (metadata unreadable, written around Baton): count it now, not never
		at = b.Now()
	}
	if now := b.Now(); at.After(now.Add(maxUsageAhead)) {
		// A replica whose clock runs days ahead: dated as it says, its
		// records would start later days' sums, and the book keeps only
		// the latest few, so today's spending would drop out of it.
		at = now
	}
	if u.AutoTier && u.Usage.ServiceTier != "" {
		b.sawAutoTier(u.Provider, fastTier(u.Usage.ServiceTier), at)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if releases {
		b.dropHoldLocked(ref.tenant, ref.hold) // with the count below, in one step: never neither
	}
	if u.CostUSD != nil && *u.CostUSD > 0 { // a negative cost (a foreign writer) must not lower the spending
		b.book(u.Tenant).add(at, *u.CostUSD)
	}
}

// Reservation holds a call's worst case against its tenant's budget until
// the call is settled. A tenant without limits holds nothing, but its
// reservation still counts the cost at Settle, so that this replica never
// decodes its own usage events again when the follower brings them. A nil
// *Reservation is valid and does nothing.
type Reservation struct {
	b       *Budgets
	tenant  string
	worst   float64
	limited bool      // the tenant had limits when the call was reserved
	unheld  float64   // else its worst case, in Budgets.unheld until Settle
	hold    uuid.UUID // the hold's id; on a shared store, its event's id
	usage   uuid.UUID // the usage event id to record the call under (UsageID)
	shared  bool      // the hold is in the store: other replicas count it
	once    sync.Once

	mu      sync.Mutex // guards the renewal timer against Settle
	renewal *time.Timer
	done    bool
}

// maxSettledUnlimited bounds the events of tenants without limits that
// wait, counted, for the follower to bring them back. The follower empties
// it as it goes (and Forget, when an event could not be appended); while
// it falls behind, further calls of such tenants are left for it to count,
// so memory stays bounded. A tenant with limits is always counted at once:
// its limit depends on it.
const maxSettledUnlimited = 10_000

func limited(l Limits) bool { return l.DailyUSD != nil || l.MonthlyUSD != nil }

// Reserve holds the worst-case cost of a call, or refuses it when the
// tenant's spent and held amounts plus this worst case would pass a limit.
// Tenants without limits are never refused, hold nothing and cost no store
// round trip. With a shared store (UseStore) the hold is an event appended
// at the budget stream's revision the check saw; an error other than a
// *BudgetError means the store could not take the hold.
func (b *Budgets) Reserve(ctx context.Context, tenant, model string, worst *float64) (*Reservation, error) {
	b.mu.Lock()
	l := b.limits[tenant]
	if !limited(l) {
		r := &Reservation{b: b, tenant: tenant} // holds nothing; Settle counts the cost
		if worst != nil && *worst > 0 {
			r.unheld = *worst
			b.unheld[tenant] += r.unheld
		}
		b.mu.Unlock()
		return r, nil
	}
	if worst == nil {
		b.mu.Unlock()
		return nil, &BudgetError{Tenant: tenant, Model: model}
	}
	hb := b.holdBook(tenant)
	if e := b.refusalLocked(tenant, model, l, hb, *worst); e != nil || b.store != nil {
		b.mu.Unlock()
		if e != nil {
			return nil, e // refused on what this replica knows: no store round trip
		}
		return b.reserveShared(ctx, tenant, model, *worst)
	}
	defer b.mu.Unlock()
	id := uuid.New()
	hb.add(b, id, hold{worst: *worst})
	return &Reservation{b: b, tenant: tenant, worst: *worst, limited: true, hold: id}, nil
}

// refusalLocked says why a call of worst case worst does not fit the
// tenant's limits now, or nil when it fits.
func (b *Budgets) refusalLocked(tenant, model string, l Limits, hb *holdBook, worst float64) *BudgetError {
	now := b.now().UTC()
	s := b.book(tenant)
	day, month := s.at(now)
	held := hb.held(b, now) + b.unheld[tenant]
	var refused *BudgetError
	var both []*BudgetError
	check := func(period string, limit *float64, spent float64, reset time.Time) {
		// Within usdUnit (costs are rounded to it): 0.2 + 0.1 spent
		// against a limit of 0.3 is at the limit, not over it.
		fits := func(amount float64) bool { return amount <= *limit+usdUnit }
		if limit == nil || fits(spent+held+worst) {
			return
		}
		e := &BudgetError{Tenant: tenant, Period: period, LimitUSD: *limit, SpentUSD: spent, ReservedUSD: held,
			WorstUSD: worst, ResetAt: reset, Model: model, HeldOnly: fits(spent + worst), Never: !fits(worst)}
		both = append(both, e)
		// The answer that matters most: a call that can never pass (of
		// two, the tighter limit, which a lower cap must fit, and of equal
		// ones the later reset: a tenant cut off by $0 day and month waits
		// for the month); else the period that resets last (waiting out
		// the day does not help when the month is spent); else whatever
		// refused.
		switch {
		case refused == nil, e.Never && !refused.Never:
			refused = e
		case refused.Never:
			if e.Never && (e.LimitUSD < refused.LimitUSD || e.LimitUSD == refused.LimitUSD && e.ResetAt.After(refused.ResetAt)) {
				refused = e
			}
		case !e.HeldOnly && (refused.HeldOnly || e.ResetAt.After(refused.ResetAt)):
			refused = e
		}
	}
	y, mo, d := now.Date()
	check("day", l.DailyUSD, day, time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC))
	check("month", l.MonthlyUSD, month, time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC))
	for _, e := range both {
		// The named refusal is the one whose worst case is over its limit;
		// one that is spent and lasts longer refuses the call too.
		if e != refused && refused.Never && !e.Never && !e.HeldOnly && e.ResetAt.After(refused.ResetAt) {
			refused.Also = e
		}
	}
	return refused
}

// Now is the budget book's clock: a usage record carries this time, and
// every replica counts its cost in that day and month.
func (b *Budgets) Now() time.Time { return b.now().UTC() }

// Settle releases the hold and counts what the call cost, at time at (the
// time its usage record carries). eventID is the id of the usage event
// that will record it, so that applying that event later does not count it
// twice: settle before appending the event, or a follower could count it
// first. Settling twice does nothing.
//
// On a shared store the usage event releases the hold on other replicas
// when eventID is UsageID(); any other id (uuid.Nil: no event follows)
// costs a release event, appended here, before the usage event can be.
func (r *Reservation) Settle(cost *float64, eventID uuid.UUID, at time.Time) {
	if r == nil {
		return
	}
	r.once.Do(func() {
		if r.shared {
			r.stopRenewal()
		}
		b := r.b
		b.mu.Lock()
		if r.unheld > 0 {
			if left := b.unheld[r.tenant] - r.unheld; left > usdUnit/2 {
				b.unheld[r.tenant] = left
			} else {
				delete(b.unheld, r.tenant) // no rounding left behind
			}
		}
		if !r.limited && (eventID == uuid.Nil || len(b.settled) >= maxSettledUnlimited) {
			b.mu.Unlock()
			return // nothing was held; the follower counts the call from its event
		}
		if r.limited {
			b.dropHoldLocked(r.tenant, r.hold)
		}
		if cost != nil && *cost > 0 { // a negative cost (a misreporting upstream) must not lower the spending, as in Apply
			if at.IsZero() {
				at = b.now()
			}
			b.book(r.tenant).add(at, *cost)
		}
		if eventID != uuid.Nil {
			b.settled[eventID] = true // counted (or nothing to count): Apply skips its event
		}
		b.mu.Unlock()
		if r.shared && eventID != r.usage {
			b.releaseShared(r, eventID)
		}
	})
}

// UsageID is the id to give the call's usage event. On a shared store the
// hold names it, so that event alone releases the hold on every replica.
func (r *Reservation) UsageID() uuid.UUID {
	if r == nil {
		return uuid.Must(uuid.NewV7())
	}
	if r.usage == uuid.Nil {
		r.usage = uuid.Must(uuid.NewV7())
	}
	return r.usage
}

// Forget drops what Settle noted for the usage event eventID, when that
// event certainly was not appended and so will never be applied (after
// an append that may have committed, eventstore.MayHaveCommitted, the note
// stays, as the event may still land). The call stays counted here.
func (b *Budgets) Forget(eventID uuid.UUID) {
	b.mu.Lock()
	delete(b.settled, eventID)
	b.mu.Unlock()
}

// Waiting is how many settled calls' usage events this replica has yet to
// see come back through the follower.
func (b *Budgets) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.settled)
}

// BudgetStatus is a tenant's limits and spending now.
type BudgetStatus struct {
	Tenant      string  `json:"tenant"`
	Limits      Limits  `json:"limits"`
	DaySpent    float64 `json:"daySpentUsd"`
	MonthSpent  float64 `json:"monthSpentUsd"`
	ReservedUSD float64 `json:"reservedUsd"`
	Day         string  `json:"day"`
	Month       string  `json:"month"`
}

// Status reports a tenant's budget.
func (b *Budgets) Status(tenant string) BudgetStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	s := b.book(tenant)
	day, month := s.at(now)
	dk, mk := periods(now)
	held := b.holdBook(tenant).held(b, now) + b.unheld[tenant]
	return BudgetStatus{Tenant: tenant, Limits: b.limits[tenant], DaySpent: RoundUSD(day), MonthSpent: RoundUSD(month), ReservedUSD: RoundUSD(held), Day: dk, Month: mk}
}

// Current is Status after reading the tenant's budget stream to its end,
// when other replicas share the store: limits set through another replica
// show at once, not when this one's follower reaches them.
func (b *Budgets) Current(ctx context.Context, tenant string) (BudgetStatus, error) {
	b.mu.Lock()
	store := b.store
	b.mu.Unlock()
	if store != nil {
		if err := b.catchUp(ctx, store, tenant); err != nil {
			return BudgetStatus{}, err
		}
	}
	return b.Status(tenant), nil
}

// SetBudget records a tenant's new limits as an event and applies it,
// with whatever else the budget stream gained before it (in order).
func (b *Budgets) SetBudget(ctx context.Context, store eventstore.Store, s BudgetSet, md eventstore.Metadata) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	ev := eventstore.NewEvent(EventBudgetSet, data, md)
	if _, err := appendUnordered(ctx, store, BudgetStream(s.Tenant), ev); err != nil {
		return err
	}
	return b.catchUp(ctx, store, s.Tenant)
}

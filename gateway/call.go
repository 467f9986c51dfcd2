package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
)

// Call is one model call: who makes it, what was asked (decoded, and as the
// client wrote it), and the attempt under way. Each model of a fallback
// chain is one attempt; the Caller sets the attempt's fields.
type Call struct {
	ID        string // the answer's id, also svc.requestId
	Front     string // chat.completions, messages, responses, generate
	Tenant    string
	KeyID     string
	RequestID string
	Req       Request
	Stream    bool
	// Native is the client's body in its own wire format, for providers
	// that speak that format (passthrough); nil when there is none.
	Native *Native
	// Dropped names what the front's decoder left out of the request
	// because no translation keeps its meaning (Codex's cache-only web
	// search); it applies only when the call is translated.
	Dropped []string
	// Direct: a stream is read on the caller's goroutine, not on a reader
	// goroutine of its own, for a front that sends nothing while it waits
	// (no pings): nothing then needs to interrupt a read. The client
	// leaving still ends it (its context is the upstream request's), and
	// an upstream silent for StreamIdle is still given up. Nothing is
	// answered before the first content (no CommitAfter), so the call can
	// fall back until then, but on a passed-through stream of the chain's
	// last model (Open). It spares
	// the first byte a hand-off between goroutines (docs/benchmarks.md).
	Direct bool

	// The attempt under way.
	Provider    Provider
	Model       *Model
	Fallback    bool     // an earlier model of the chain failed
	Tried       []string // the models Complete sent this call to, in order
	Passthrough bool     // this attempt forwards Native as it is
	Start       time.Time
	hold        *Reservation
	// asked is the capacity tier the attempt sends: the body's, when it
	// is passed through (a decoded request does not keep it). tier is the
	// one it is held at, and billed at when its answer does not say
	// (Caller.TierFor).
	asked, tier string
	// geo is the geography the attempt is held at, and billed at when its
	// answer does not say (GeoFor).
	geo string
	// Failed is what Complete billed the models of the chain that failed
	// once they had the request (a served answer that does not read as
	// one, a client that left), in order: the answer's Billed is the
	// answering model's alone.
	Failed []Bill
	// MayFallBack, when set, is asked before Complete sends the call to a
	// later model of the chain, given what the models before it were
	// billed (Failed); false ends the chain there, with the last failure
	// (generate's cost ceiling).
	MayFallBack func(next Target) bool
}

// Wire formats a front speaks and a provider may take as they are.
const (
	FormatAnthropic = "anthropic" // /v1/messages
	FormatChat      = "chat"      // OpenAI /v1/chat/completions
	FormatResponses = "responses" // OpenAI /v1/responses
)

// Native is a request body as the client wrote it, in one wire format.
type Native struct {
	Format string
	Body   []byte
	// Header holds the client's protocol headers a provider of the same
	// format takes as they are (anthropic-version, anthropic-beta); never
	// credentials.
	Header http.Header
	// Query is the client's query string (Claude Code's ?beta=true).
	Query string
	// ServiceTier is the body's service_tier (Request.ServiceTier), which
	// an attempt passing it through sends.
	ServiceTier string
	// Stream: the client asked for a stream; StreamUsage: for the usage
	// too (chat's stream_options.include_usage). Read once, by the front.
	Stream, StreamUsage bool
}

// Forwarder is a provider that takes a wire format's bodies as they are,
// with only the model rewritten.
type Forwarder interface {
	Speaks(format string) bool
	// Forward sends n with model as the model. A finished answer has its
	// upstream body in Response.Raw; a stream's deltas carry each upstream
	// event in Delta.Raw.
	Forward(ctx context.Context, n *Native, model string, stream bool) (*Response, Stream, error)
}

// KeyRedactor is a provider that can take its own key out of a text.
type KeyRedactor interface {
	// RedactKey is s with the provider's own key in it replaced.
	RedactKey(s string) string
}

// redact takes the provider's key out of what an upstream said in err (a
// failure event in a stream, which no header redaction saw), in place:
// the message reaches the client and the log.
func redact(p Provider, err error) error {
	if ue, ok := errors.AsType[*UpstreamError](err); ok {
		if r, ok := p.(KeyRedactor); ok {
			ue.Message, ue.Param, ue.Code = r.RedactKey(ue.Message), r.RedactKey(ue.Param), r.RedactKey(ue.Code)
		}
	}
	return err
}

// asSent marks err, an upstream's error about the attempt's body, as about
// the client's body as it was sent when the attempt passed it through
// (UpstreamError.AsSent): the field its param names (an error object in a
// success answer or a stream, as in a failure status) is the client's.
func asSent(c *Call, err error) error {
	if ue, ok := errors.AsType[*UpstreamError](err); ok && c.Passthrough {
		ue.AsSent = true
	}
	return err
}

// TokenCounter is a provider that counts a Messages request's input tokens
// upstream (POST /v1/messages/count_tokens): n as the client sent it, its
// protocol headers and query included, with model as its model.
type TokenCounter interface {
	CountTokens(ctx context.Context, n *Native, model string) (int, error)
}

// Caller runs model calls: routing down a chain, fallback before the
// first byte, the budget hold and its settle, usage events. The fronts
// decode and encode; everything between is here.
type Caller struct {
	Budgets *Budgets // nil: no budgets
	Usage   *UsageWriter
	// StreamIdle gives up on an upstream stream that sends nothing for
	// this long.
	StreamIdle time.Duration
	// CommitAfter is how long a stream read on its own goroutine (a
	// streamed message) waits for its first content before it answers the
	// client anyway (and from then on cannot fall back); a passed-through
	// stream of the chain's last model does not wait (Open).
	CommitAfter func() time.Duration
	// AutoTierSeen, when set, is told when this replica's answers show a
	// provider's default tier changed (TierFor): served is the tier of the
	// answer that showed it.
	AutoTierSeen func(provider, served string)
	// OverReported, when set, is told of an upstream that reported more
	// of a count (output tokens, input tokens, web searches, file
	// searches) than the call could have used; the call is billed the
	// count given as billed.
	OverReported func(provider, model, count string, reported, billed int)
}

// Ceilings no model call reaches (a thousand times the largest context
// offered today; a search tool's uses are bounded far lower): a count
// past them is corrupt or hostile, and is not billed as told.
const (
	MaxReportedTokens   = 1_000_000_000
	MaxReportedSearches = 10_000
)

// DefaultTierer is a provider whose account may serve a call that names
// no capacity tier (or auto) at a tier of its own: an OpenAI project's
// default, as its providers entry declares it (defaultServiceTier; for
// the built-in openai provider, BATON_OPENAI_DEFAULT_SERVICE_TIER).
type DefaultTierer interface {
	DefaultServiceTier() string
}

// TierFor is the tier a call on t is held at, and billed at when its
// answer does not say: the one it asks for (asked); but a call that names none (or
// auto) to a model with a fast rate is held at the fast tier where its
// provider serves such calls there: declared, or seen in such answers of
// any replica (Budgets.ServesAutoFast; docs/budgets.md). Until one is
// seen, such calls are held for what the standard tier costs and billed at
// the tier they were served at.
func (k *Caller) TierFor(asked string, t Target) string {
	if !autoTiered(asked, t.Model) {
		return asked
	}
	if declaredFast(t.Provider) || k.Budgets.ServesAutoFast(t.Provider.Name()) {
		return "fast"
	}
	return asked
}

// declaredFast: p's account is declared to serve a call that names no
// tier at the fast tier (DefaultTierer).
func declaredFast(p Provider) bool {
	d, ok := p.(DefaultTierer)
	return ok && fastTier(d.DefaultServiceTier())
}

// DefaultGeoer is a provider whose account may run a call that names no
// geography in one of its own: an Anthropic workspace's default, as its
// providers entry declares it (defaultInferenceGeo; for the built-in
// anthropic provider, BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO).
type DefaultGeoer interface {
	DefaultInferenceGeo() string
}

// GeoFor is the geography a call on t is held at, and billed at when its
// answer does not say: the one it asks for; but a call that names none
// runs in its provider's declared default, on a model whose price has a
// rate for it (a model that does not take the parameter runs anywhere). A
// declared global is no geography: it changes neither hold nor bill.
func GeoFor(asked string, t Target) string {
	if asked != "" || t.Model.Pricing == nil {
		return asked
	}
	d, ok := t.Provider.(DefaultGeoer)
	if !ok {
		return asked
	}
	if geo := d.DefaultInferenceGeo(); geo != "" && geo != "global" {
		if _, priced := t.Model.Pricing.GeoRate(geo); priced {
			return geo
		}
	}
	return asked
}

// autoTiered: a call asking for tier on m is served at its provider's
// default tier, and that default changes its cost (m has a fast rate).
func autoTiered(tier string, m *Model) bool {
	return (tier == "" || tier == "auto") && m.Pricing != nil && m.Pricing.FastRate > 0
}

func fastTier(tier string) bool { return tier == "fast" || tier == "priority" }

// sawTier learns from an answer, settled at time at, the tier its provider
// serves a call that names none (or auto) at, and says whether the answer
// told it (the usage event's autoTier, from which other replicas learn it
// too).
func (k *Caller) sawTier(c *Call, served string, at time.Time) bool {
	if served == "" || !autoTiered(c.asked, c.Model) {
		return false
	}
	if k.Budgets.sawAutoTier(c.Provider.Name(), fastTier(served), at) && k.AutoTierSeen != nil && !declaredFast(c.Provider) {
		k.AutoTierSeen(c.Provider.Name(), served)
	}
	return true
}

// held is the request as the attempt is held and billed: at its tier,
// in its geography.
func (c *Call) held() Request {
	req := c.Req
	req.ServiceTier, req.Geo = c.tier, c.geo
	return req
}

// ReleaseHold frees the current attempt's budget hold if it was not
// settled (a handler that panicked between the hold and the settle):
// deferred by every caller, so a hold can never outlive its request.
// Earlier attempts are settled before the next begins, and a settled hold
// is not touched (Settle runs once).
func (c *Call) ReleaseHold() {
	c.hold.Settle(nil, uuid.Nil, time.Time{})
}

// begin starts an attempt on one target: the budget holds the call's worst
// case first, so concurrent calls cannot overspend.
func (k *Caller) begin(ctx context.Context, c *Call, t Target) error {
	c.Provider, c.Model = t.Provider, t.Model
	c.Req.Model = t.Model.Model
	c.Req.OutputLimit, c.Req.Streamed = t.Model.MaxOutputTokens, c.Stream
	c.Passthrough = false
	if f, ok := t.Provider.(Forwarder); ok && c.Native != nil && f.Speaks(c.Native.Format) {
		c.Passthrough = true
	}
	c.Start = time.Now()
	c.asked = c.Req.ServiceTier
	if c.Passthrough {
		c.asked = c.Native.ServiceTier
	}
	c.tier = k.TierFor(c.asked, t)
	c.geo = GeoFor(c.Req.Geo, t)
	if k.Budgets == nil {
		return nil
	}
	req := c.held()
	hold, err := k.Budgets.Reserve(ctx, c.Tenant, t.Model.ID, WorstCost(req, t.Model))
	var be *BudgetError
	if errors.As(err, &be) && be.Period == "" && UnpricedTier(req, t.Model) {
		if _, ok := t.Model.Pricing.TierRate(req.ServiceTier); ok {
			be.Geo = req.Geo // the tier is priced: the geography is not
		} else {
			be.Tier = c.asked
		}
	}
	if be != nil {
		be.Front, be.CapParam = c.Front, req.CapParam
		if be.Never {
			over := func(v *float64) bool { return v == nil || *v > be.LimitUSD+usdUnit }
			least := LeastCost(req, t.Model, false)
			switch {
			case over(LeastCost(req, t.Model, true)):
				be.Quota = true
			case over(least):
				be.Input, be.LeastUSD = true, *least
			default:
				be.Quota = c.Front == "generate" // its cap is the task type's
			}
		}
		if c.tier != c.asked {
			be.AutoTier, be.TierSent = c.tier, c.Passthrough
		}
		if c.geo != c.Req.Geo {
			be.AutoGeo = c.geo
		}
		if p := t.Model.Pricing; p != nil {
			if p.WebSearchPerK > 0 {
				be.Searches = req.WebSearches
			}
			if p.FileSearchPerK > 0 {
				be.FileSearches = req.FileSearches
			}
		}
	}
	c.hold = hold
	return err
}

// settle ends an attempt: it prices the usage, releases the budget hold and
// counts the cost, and returns the cost (nil: unpriced) and a function that
// records the usage event. The fronts write their answer first and record
// after; the usage writer appends in the background, batching, so no fsync
// is on the client's path. A partial stream is billed for what was sent.
func (k *Caller) settle(c *Call, u Usage, outcome string) (Usage, *float64, func()) {
	held := c.held()
	u = k.bounded(c, u)
	cost := CostOf(held, c.Model, u)
	id := c.hold.UsageID() // on a shared store, this event releases the hold
	at := time.Now().UTC()
	if k.Budgets != nil {
		at = k.Budgets.Now()
	}
	autoTier := k.sawTier(c, u.ServiceTier, at)
	c.hold.Settle(cost, id, at) // before the append, so a follower cannot count it first
	rec := UsageRecord{
		Tenant: c.Tenant, KeyID: c.KeyID, Front: c.Front, Model: c.Model.ID, Provider: c.Provider.Name(), Stream: c.Stream,
		Usage: u, CostUSD: cost, LatencyMs: time.Since(c.Start).Milliseconds(), Outcome: outcome, RequestID: c.RequestID, At: at,
		AutoTier: autoTier,
	}
	return u, cost, func() {
		if k.Usage != nil {
			k.Usage.Record(id, rec)
		}
	}
}

// bounded is the usage a call is billed: an upstream's report held to what
// the request allowed (settle applies it; Answer.Billed is its result,
// which generate reports).
func (k *Caller) bounded(c *Call, u Usage) Usage {
	held := c.held()
	tell := func(count string, reported, billed int) {
		if k.OverReported != nil {
			k.OverReported(c.Provider.Name(), c.Model.ID, count, reported, billed)
		}
	}
	limit, known := BilledOutputBound(held, c.Model)
	if !known {
		limit = MaxReportedTokens
	}
	if u.OutputTokens > limit {
		// More than the request let the model write: the upstream's count
		// is wrong, and billing it could spend a tenant's month at once.
		tell("output tokens", u.OutputTokens, limit)
		u.OutputTokens = limit
	}
	if u.InputTokens > MaxReportedTokens || u.CacheReadTokens > MaxReportedTokens || u.CacheWriteTokens > MaxReportedTokens ||
		u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens > MaxReportedTokens {
		// An input no call could read: Baton's count of the request.
		est := EstimateUsage(c.Req, "", countOr4).InputTokens
		tell("input tokens", u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, est)
		u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CacheWrite1hTokens, u.Estimated = est, 0, 0, 0, true
	}
	if u.WebSearches > MaxReportedSearches {
		tell("web searches", u.WebSearches, MaxReportedSearches)
		u.WebSearches = MaxReportedSearches
	}
	if u.FileSearches > MaxReportedSearches {
		tell("file searches", u.FileSearches, MaxReportedSearches)
		u.FileSearches = MaxReportedSearches
	}
	if c.Front == "generate" {
		// generate's prompt is Baton's own, whole, and no tool runs at the
		// provider: its input bound is a bound of the input billed too.
		// Cache tokens too: it asks for no cache, and an upstream's
		// count of them is within the prompt as the input's is.
		if in, _ := WorstTokens(held, c.Model); u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens > in {
			u.CacheWriteTokens = min(u.CacheWriteTokens, in)
			u.CacheWrite1hTokens = min(u.CacheWrite1hTokens, u.CacheWriteTokens)
			u.CacheReadTokens = min(u.CacheReadTokens, in-u.CacheWriteTokens)
			u.InputTokens = in - u.CacheWriteTokens - u.CacheReadTokens
		}
	}
	return u
}

func (k *Caller) record(c *Call, u Usage, outcome string) *float64 {
	_, cost, record := k.settle(c, u, outcome)
	record()
	return cost
}

// countOr4 counts a call's tokens when its upstream reports none: with
// o200k_base, or at four bytes a token should the tokenizer be unavailable.
func countOr4(text string) int {
	if text == "" {
		return 0
	}
	sample := text
	if len(text) > estimateSample {
		end := estimateSample
		for end > 0 && !utf8.RuneStart(text[end]) {
			end-- // never within a character
		}
		sample = text[:end]
	}
	n, _, ok := countUpTo(sample, math.MaxInt, CountTokens)
	if !ok {
		return (len(text) + 3) / 4
	}
	if len(sample) < len(text) {
		return int(float64(n) * float64(len(text)) / float64(len(sample)))
	}
	return n
}

// estimateSample bounds what one estimate tokenizes: a longer text is
// counted on its first estimateSample bytes, a piece at a time, and the
// rest taken at that rate. Counted whole, a 32 MiB body took about 15 s
// of CPU after its client had left, and the tokenizer's cached matchers
// kept its runes for good.
const estimateSample = 1 << 20

// outputText is what a model produced: its text and tool-call arguments.
func outputText(content []Block) string {
	var b strings.Builder
	for _, bl := range content {
		b.WriteString(bl.Text)
		b.WriteString(bl.Thinking)
		b.WriteString(bl.Name)
		b.Write(bl.Input)
	}
	return b.String()
}

// failed is the outcome of an attempt that got no answer: the client left
// (before the upstream answered), or the upstream failed.
func failed(ctx context.Context) string {
	if ctx.Err() != nil {
		return "client_gone"
	}
	return "upstream_error"
}

// fallbackRefused is what a chain ends with when its next model cannot be
// held: last, the error that made it fall back, when the budget refused
// that model for having no price (the model, or the tier asked for), as
// the client did not ask for it and its refusal would hide why the model
// it asked for failed; else err.
func fallbackRefused(err, last error) error {
	var be *BudgetError
	if last != nil && errors.As(err, &be) && be.Period == "" {
		return last
	}
	return err
}

// retryable reports whether the next model of a chain may take over after
// err: 429, 5xx, timeouts and connection errors, while the client is still
// there.
func retryable(ctx context.Context, err error) bool {
	var ue *UpstreamError
	return errors.As(err, &ue) && ue.Retryable() && ctx.Err() == nil
}

// refused reports whether err is a model's refusal of the request before
// any upstream call (an adapter's 400: a field its provider cannot take):
// the chain goes on to the next model as if this one were not in it, and
// the refusal is the answer only when no model took the call.
func refused(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && (de.Kind == domain.KindInvalid || de.Kind == domain.KindBadRequest)
}

// passedOver reports whether the model that answered err refused the
// call (refused): it is then passed over, its hold released (no upstream
// call: nothing to record), and the first refusal kept in refusal.
func passedOver(c *Call, err error, refusal *error) bool {
	if !refused(err) {
		return false
	}
	c.ReleaseHold()
	*refusal = cmp.Or(*refusal, err)
	return true
}

// orRefusal is the chain's error: the last upstream failure, else the
// first model's refusal.
func orRefusal(last, refusal error) error {
	if last != nil {
		return last
	}
	return refusal
}

// Bill is what one attempt of a call was billed: its usage, held to what
// the request allowed, and its cost (nil: unpriced).
type Bill struct {
	Usage Usage
	Cost  *float64
}

// Answer is a non-streamed call's answer, settled: its cost (nil:
// unpriced) and the usage event, to be recorded once the answer is written.
type Answer struct {
	*Response
	Billed Usage // the usage billed: Response.Usage held to what the request allowed
	Cost   *float64
	Record func()
}

// Complete runs a non-streaming call down the chain and settles the
// answer; failed attempts are recorded here.
func (k *Caller) Complete(ctx context.Context, c *Call, chain []Target) (*Answer, error) {
	var last, refusal error
	// Whether the upstream got the request: a client that leaves after it
	// did is billed the input (below), not one that left before.
	var wrote atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }})
	c.Tried, c.Failed = c.Tried[:0], c.Failed[:0]
	for i, t := range chain {
		wrote.Store(false)
		if i > 0 && c.MayFallBack != nil && !c.MayFallBack(t) {
			break
		}
		if err := k.begin(ctx, c, t); err != nil {
			return nil, fallbackRefused(err, last)
		}
		c.Fallback = i > 0
		c.Tried = append(c.Tried, t.Model.ID)
		var resp *Response
		var err error
		if c.Passthrough {
			resp, _, err = t.Provider.(Forwarder).Forward(tctx, c.Native, t.Model.Model, false)
		} else {
			resp, err = t.Provider.Complete(tctx, c.Req)
		}
		if err == nil {
			if u := resp.Usage; !resp.UsageMissing && u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadTokens == 0 && u.CacheWriteTokens == 0 {
				resp.UsageMissing = true // a usage of no counts ({}): no call is free
			} else if !resp.UsageMissing && u.OutputTokens == 0 {
				if out := outputText(resp.Content); out != "" {
					// Output written, none counted: Baton's count of it.
					resp.Usage.OutputTokens, resp.Usage.Estimated = max(EstimateUsage(c.Req, out, countOr4).OutputTokens, 1), true
				}
			}
			if resp.UsageMissing {
				// Tokens only: what else the answer said (its tier, its
				// searches) is billed as said.
				est := EstimateUsage(c.Req, outputText(resp.Content), countOr4)
				resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Estimated = est.InputTokens, est.OutputTokens, true
			}
			billed, cost, record := k.settle(c, resp.Usage, "ok")
			return &Answer{Response: resp, Billed: billed, Cost: cost, Record: record}, nil
		}
		if passedOver(c, err, &refusal) {
			continue
		}
		var took Usage
		if ue, ok := errors.AsType[*UpstreamError](err); ctx.Err() != nil && wrote.Load() || ok && ue.Served {
			// The client left while the upstream had the request, or the
			// upstream served an answer that does not read as one: its
			// input is billed (neither is free at the provider).
			took = Usage{InputTokens: EstimateUsage(c.Req, "", countOr4).InputTokens, Estimated: true}
		}
		billed, cost, record := k.settle(c, took, failed(ctx))
		record()
		if took != (Usage{}) {
			c.Failed = append(c.Failed, Bill{Usage: billed, Cost: cost})
		}
		last = redact(t.Provider, asSent(c, err))
		if !retryable(ctx, err) {
			break
		}
	}
	return nil, orRefusal(last, refusal)
}

// tally tracks what a stream has handed out, for billing: the usage the
// upstream reported (if it did) and the output text.
type tally struct {
	told      bool // the upstream reported the input side
	committed bool // a delta the client must see (Delta.Commits) was handed out
	u         Usage
	out       strings.Builder
}

// See counts a delta that was sent.
func (t *tally) See(d Delta) {
	t.committed = t.committed || d.Commits()
	if d.Usage != nil && d.StopReason == "" {
		t.u, t.told = WithInput(t.u, *d.Usage), true
	}
	if d.ServiceTier != "" {
		t.u.ServiceTier = d.ServiceTier
	}
	if d.WebSearch {
		t.u.WebSearches++
	}
	if d.FileSearch {
		t.u.FileSearches++
	}
	if d.Text != "" || d.Thinking != "" || d.Refusal != "" || d.ToolCall != nil {
		t.u.OutputTokens++ // a floor, one token a delta
		t.out.WriteString(d.Text)
		t.out.WriteString(d.Thinking)
		t.out.WriteString(d.Refusal)
		if d.ToolCall != nil {
			t.out.WriteString(d.ToolCall.Name)
			t.out.WriteString(d.ToolCall.Arguments)
		}
	}
}

// Bill is the usage to charge: the upstream's final report when there is
// one (reported); else what was sent, with whatever the upstream did not
// report counted by Baton and marked estimated.
func (t *tally) Bill(req Request, reported *Usage) Usage {
	if reported != nil {
		u := *reported
		u.ServiceTier = cmp.Or(u.ServiceTier, t.u.ServiceTier)
		// A report never bills less than what was seen to pass: output
		// when it names none (a usage of {}, or a message_delta without
		// its count, said 0) though some streamed, counted as when no
		// report came; and the searches whose results streamed (a
		// message_delta that names none).
		if u.OutputTokens == 0 && t.out.Len() > 0 {
			u.OutputTokens, u.Estimated = max(EstimateUsage(req, t.out.String(), countOr4).OutputTokens, 1), true
		}
		if u.InputTokens == 0 && u.CacheReadTokens == 0 && u.CacheWriteTokens == 0 {
			// No input counted: what came early, else Baton's count.
			if t.told {
				u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CacheWrite1hTokens = t.u.InputTokens, t.u.CacheReadTokens, t.u.CacheWriteTokens, t.u.CacheWrite1hTokens
			} else {
				u.InputTokens, u.Estimated = EstimateUsage(req, "", countOr4).InputTokens, true
			}
		}
		u.WebSearches = max(u.WebSearches, t.u.WebSearches)
		u.FileSearches = max(u.FileSearches, t.u.FileSearches)
		return u
	}
	est := EstimateUsage(req, t.out.String(), countOr4)
	u := t.u
	if !t.told {
		u.InputTokens, u.Estimated = est.InputTokens, true
	}
	if est.OutputTokens > u.OutputTokens {
		u.OutputTokens, u.Estimated = est.OutputTokens, true
	}
	if t.out.Len() > 0 {
		// No report counted the output: the floor of a token a delta is
		// Baton's count as much as the tokenizer's is.
		u.Estimated = true
	}
	return u
}

// WithInput takes the input side of usage reported mid-stream, keeping the
// output count so far, and where the call ran when it says (Anthropic's
// message_start tells inference_geo): a stream that ends without a final
// report is billed at that geography's rate, as a whole one is.
func WithInput(sent, u Usage) Usage {
	sent.InputTokens, sent.CacheReadTokens, sent.CacheWriteTokens = u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens
	sent.CacheWrite1hTokens = u.CacheWrite1hTokens
	sent.Geo = cmp.Or(u.Geo, sent.Geo)
	sent.OutputTokens = max(sent.OutputTokens, u.OutputTokens)
	sent.WebSearches = max(sent.WebSearches, u.WebSearches)
	sent.FileSearches = max(sent.FileSearches, u.FileSearches)
	return sent
}

// Pumped is one delta read from an upstream stream.
type Pumped struct {
	D   Delta
	Err error
}

// Upstream is an open upstream stream, read on its own goroutine, or on
// the caller's (Call.Direct). It bills the call: the front hands it the
// stream's end (Finish), a failure (Fail) or the client leaving (Gone),
// and it settles the call once, on what it handed out (and read ahead,
// when the client left).
type Upstream struct {
	k       *Caller
	c       *Call
	ctx     context.Context // the call's: its end is the client leaving
	sent    tally
	settled bool
	st      Stream
	deltas  <-chan Pumped
	done    <-chan struct{}
	pending []Pumped // deltas read before anything was sent, handed out first
	cancel  context.CancelFunc

	direct   bool
	idle     *time.Timer // direct: armed while a read waits; gives the upstream up
	idleFor  time.Duration
	stalled  atomic.Bool
	provider string
}

// Finish settles the call as answered, on the upstream's final report
// (reported) or, without one, on what was handed out. It returns the usage
// billed, its cost (nil: unpriced) and the usage event's record, which
// the front calls once its answer is written. A call already settled
// is left: nothing billed, nothing to record.
func (u *Upstream) Finish(reported *Usage) (Usage, *float64, func()) {
	if u.settled {
		return Usage{}, nil, func() {}
	}
	u.settled = true
	return u.k.settle(u.c, u.sent.Bill(u.c.Req, reported), "ok") // the usage billed: the report held to the request's bound
}

// Settled reports whether Finish (or an end) has settled the call.
func (u *Upstream) Settled() bool { return u.settled }

// End settles the call unfinished with outcome, on what was read from
// the upstream (handed out or not), so that it is not recorded as free.
// It returns the usage and its cost; a call already settled is left.
func (u *Upstream) End(outcome string) (Usage, *float64) {
	return u.end(outcome, nil)
}

// end settles the call unfinished, on reported when the upstream said what
// it used (held to what was seen to pass), else on what was read.
func (u *Upstream) end(outcome string, reported *Usage) (Usage, *float64) {
	if u.settled {
		return Usage{}, nil
	}
	u.settled = true
	for _, p := range u.pending {
		u.sent.See(p.D)
	}
	u.pending = nil
	bill := u.sent.Bill(u.c.Req, reported)
	return bill, u.k.record(u.c, bill, outcome)
}

// Gone ends the call as the client left it.
func (u *Upstream) Gone() { u.End("client_gone") }

// Fail ends the call on a failed read: the client having left
// (client_gone, not told), or a break of the upstream, which the front
// tells the client (tell): upstream_error on the input the upstream told
// when nothing of the answer was handed out, else partial.
func (u *Upstream) Fail(err error) (bill Usage, cost *float64, tell bool) {
	if errors.Is(err, context.Canceled) || u.ctx.Err() != nil || errors.Is(err, io.ErrClosedPipe) {
		u.Gone()
		return Usage{}, nil, false
	}
	if u.settled {
		return Usage{}, nil, false // the answer was whole; only its tail broke
	}
	if ue, ok := errors.AsType[*UpstreamError](err); ok && ue.Usage != nil {
		// The upstream said what the failed call used: that is billed,
		// held to the request's bound and to what was seen to pass.
		outcome := "partial"
		if !u.sent.committed {
			outcome = "upstream_error"
		}
		bill, cost = u.end(outcome, ue.Usage)
		return bill, cost, true
	}
	if !u.sent.committed {
		// Nothing of the answer was handed out (a passed-through stream
		// of the chain's last model is answered before its first
		// content): the upstream failed before the answer began.
		bill, cost = u.failedEarly(err)
		return bill, cost, true
	}
	bill, cost = u.End("partial")
	return bill, cost, true
}

// Close stops the upstream and waits for its reader.
func (u *Upstream) Close() {
	u.cancel()
	u.st.Close()
	if u.direct {
		u.idle.Stop()
		return
	}
	<-u.done
}

// newDirect is an upstream read on the caller's goroutine. cancel ends
// the upstream request (its read included); the idle timer does, when the
// upstream stays silent.
func newDirect(cancel context.CancelFunc, st Stream, idle time.Duration, provider string) *Upstream {
	if idle <= 0 {
		idle = DefaultStreamIdle
	}
	u := &Upstream{st: st, cancel: cancel, direct: true, idleFor: idle, provider: provider}
	u.idle = time.AfterFunc(idle, func() { u.stalled.Store(true); cancel() })
	u.idle.Stop()
	return u
}

// read reads the next delta on the caller's goroutine, the idle limit
// counting only while it waits for the upstream.
func (u *Upstream) read() Pumped {
	for {
		u.idle.Reset(u.idleFor)
		d, err := u.st.Next()
		u.idle.Stop()
		if u.stalled.Load() {
			d, err = Delta{}, &UpstreamError{Provider: u.provider, Timeout: true, Message: fmt.Sprintf("sent nothing for %v", u.idleFor)}
		}
		if err == nil && d.KeepAlive {
			continue // alive: the limit starts again
		}
		return Pumped{d, err}
	}
}

// Commits reports whether a delta carries something the client must see
// (content, a tool call, the end). A usage-only delta (Anthropic's
// message_start) does not commit the stream: an upstream that reports its
// input tokens and then fails (overloaded_error) still falls back.
func (d Delta) Commits() bool {
	return d.Text != "" || d.Thinking != "" || d.Signature != "" || d.Refusal != "" || d.ToolCall != nil || d.StopReason != "" || d.Commit
}

// Open tries the chain until a model's stream yields its first content (or
// stays silent for CommitAfter). Nothing reaches the client before that, so
// a model that fails first (429, 5xx, timeout, a broken stream, an error
// event after message_start) hands over to the next. The chain's last
// model, passed through, is answered as soon as its upstream answers.
func (k *Caller) Open(ctx context.Context, c *Call, chain []Target) (*Upstream, error) {
	var last, refusal error
	for i, t := range chain {
		if err := k.begin(ctx, c, t); err != nil {
			return nil, fallbackRefused(err, last)
		}
		c.Fallback = i > 0
		// pctx ends the pump (Upstream.Close); sctx, under it, the upstream
		// read alone, which the pump ends when the upstream stalls, so the
		// stall's error still reaches the caller.
		pctx, cancel := context.WithCancel(ctx)
		sctx, scancel := context.WithCancel(pctx)
		var st Stream
		var err error
		// The wait for the upstream's headers is a silence as the wait
		// for its next event is: bounded by StreamIdle, not by the
		// transport's header timeout (a whole call's ten minutes).
		idle := cmp.Or(k.StreamIdle, DefaultStreamIdle)
		var stalled atomic.Bool
		timer := time.AfterFunc(idle, func() { stalled.Store(true); scancel() })
		if c.Passthrough {
			_, st, err = t.Provider.(Forwarder).Forward(sctx, c.Native, t.Model.Model, true)
		} else {
			st, err = t.Provider.Stream(sctx, c.Req)
		}
		timer.Stop()
		if stalled.Load() && ctx.Err() == nil {
			if err == nil {
				st.Close()
			}
			err = &UpstreamError{Provider: t.Provider.Name(), Timeout: true, Message: fmt.Sprintf("sent nothing for %v", idle)}
		}
		if err != nil {
			scancel()
			cancel()
			if passedOver(c, err, &refusal) {
				continue
			}
			k.record(c, Usage{}, failed(ctx))
			last = err
			if retryable(ctx, err) {
				continue
			}
			return nil, err
		}
		// The chain's last model, passed through, has nothing to fall back
		// to: its stream is answered as soon as the upstream's is, event by
		// event as the provider sends them, not held until its first
		// content. A translated stream still waits for its first content,
		// so that a failure before it is an error status in the client's
		// format, which its SDK retries.
		final := i == len(chain)-1 && c.Passthrough
		var u *Upstream
		if c.Direct {
			u = newDirect(func() { scancel(); cancel() }, st, k.StreamIdle, t.Provider.Name())
		} else {
			deltas, done := pump(pctx, scancel, st, k.StreamIdle, t.Provider.Name())
			u = &Upstream{st: st, deltas: deltas, done: done, cancel: cancel}
		}
		u.k, u.c, u.ctx = k, c, ctx
		if final {
			return u, nil
		}
		if c.Direct {
			err = u.awaitDirect()
		} else {
			err = u.awaitContent()
		}
		if err == nil {
			return u, nil
		}
		last = redact(t.Provider, asSent(c, err))
		if ctx.Err() != nil {
			return nil, err
		}
		if !retryable(ctx, err) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
	}
	return nil, orRefusal(last, refusal)
}

// awaitContent reads an opened stream until its first committing delta or
// until CommitAfter passes, keeping what it read for the caller. On an
// upstream failure (or the client leaving) it closes the stream, records
// the attempt's usage and returns the error.
func (u *Upstream) awaitContent() error {
	wait := 5 * time.Second
	if u.k.CommitAfter != nil {
		wait = u.k.CommitAfter()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case p := <-u.deltas:
			if commits, err := u.keep(p); err != nil || commits {
				return err
			}
		case <-timer.C:
			return nil
		case <-u.ctx.Done():
			return u.clientGone()
		}
	}
}

// awaitDirect is awaitContent for a stream read on the caller's
// goroutine: it reads until the first committing delta, however long that
// takes (the idle limit aside).
func (u *Upstream) awaitDirect() error {
	for {
		p := u.read()
		if p.Err != nil && u.ctx.Err() != nil {
			return u.clientGone() // the client left, which ended the read
		}
		if commits, err := u.keep(p); err != nil || commits {
			return err
		}
	}
}

// keep takes a delta read before anything was sent, and reports whether
// it commits the stream. A failed read closes the stream and records the
// attempt.
func (u *Upstream) keep(p Pumped) (commits bool, err error) {
	if p.Err != nil {
		u.Close()
		u.failedEarly(p.Err)
		return false, p.Err
	}
	u.pending = append(u.pending, p)
	return p.D.Commits(), nil
}

// failedEarly settles an attempt that failed before its answer began:
// upstream_error, billed on the input the upstream told (a model that
// fails before its first content costs what it reported, if anything).
// An upstream that served a whole answer in place of the stream (err is
// Served) is billed at least its input, as a whole call's answer that
// does not read as one is: the provider did the work.
func (u *Upstream) failedEarly(err error) (Usage, *float64) {
	u.settled = true
	bill := u.Told()
	if ue, ok := errors.AsType[*UpstreamError](err); ok && ue.Served && bill.InputTokens+bill.CacheReadTokens+bill.CacheWriteTokens == 0 {
		bill.InputTokens, bill.Estimated = EstimateUsage(u.c.Req, "", countOr4).InputTokens, true
	}
	return bill, u.k.record(u.c, bill, "upstream_error")
}

// clientGone closes a stream whose client left before it began. The
// upstream took the request (its stream is open) and was working on it:
// the input is billed, as when the client leaves after the stream began,
// not nothing.
func (u *Upstream) clientGone() error {
	u.Close()
	u.Gone()
	return u.ctx.Err()
}

// Told is the input side of usage the upstream reported before any
// content (Anthropic's message_start), from the deltas read so far.
func (u *Upstream) Told() Usage {
	early := u.sent.u
	for _, p := range u.pending {
		if p.D.Usage != nil && p.D.StopReason == "" {
			early = WithInput(early, *p.D.Usage)
		}
	}
	return early
}

// Next returns the upstream's next delta: those read ahead first. Before
// it waits for one, it calls flush, so what the caller wrote leaves now,
// and deltas that arrive together leave in one write. gone: the call's
// context ended (the client left).
func (u *Upstream) Next(tick <-chan time.Time, flush func()) (p Pumped, ticked bool, gone bool) {
	p, ticked, gone = u.next(tick, flush)
	if p.Err != nil {
		redact(u.c.Provider, asSent(u.c, p.Err))
	}
	if gone {
		// Ended for a cause other than the client's leaving (the server's
		// stop): a failure the front tells its client, who is still there.
		if cause := context.Cause(u.ctx); !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			return Pumped{Err: cause}, false, false
		}
	}
	if !ticked && !gone && p.Err == nil {
		u.sent.See(p.D)
	}
	return p, ticked, gone
}

func (u *Upstream) next(tick <-chan time.Time, flush func()) (p Pumped, ticked bool, gone bool) {
	if len(u.pending) > 0 {
		p, u.pending = u.pending[0], u.pending[1:]
		return p, false, false
	}
	if u.direct { // tick is not read: a direct stream's front sends no pings
		if b, ok := u.st.(Buffered); !ok || !b.Buffered() {
			flush()
		}
		p = u.read()
		return p, false, p.Err != nil && u.ctx.Err() != nil
	}
	select {
	case p = <-u.deltas:
		return p, false, false
	default:
	}
	flush()
	select {
	case p = <-u.deltas:
		return p, false, false
	case <-u.ctx.Done():
		return p, false, true
	case <-tick:
		return p, true, false
	}
}

// pump reads the upstream stream on its own goroutine, so the caller can
// send pings while it waits. The goroutine ends when the stream ends or
// fails, or when ctx ends (the caller then closes the stream, which
// unblocks a pending read); done is closed when it has returned. An
// upstream that sends nothing for idle is given up: cancel (the stream's
// own context, under ctx) ends its read, and the stream fails with a
// retryable timeout of provider.
func pump(ctx context.Context, cancel context.CancelFunc, st Stream, idle time.Duration, provider string) (<-chan Pumped, <-chan struct{}) {
	if idle <= 0 {
		idle = DefaultStreamIdle
	}
	ch := make(chan Pumped, 8) // reads ahead a little: fewer hand-offs between the goroutines
	done := make(chan struct{})
	go func() {
		defer close(done)
		var stalled atomic.Bool
		timer := time.AfterFunc(idle, func() { stalled.Store(true); cancel() })
		defer timer.Stop()
		for {
			d, err := st.Next()
			if stalled.Load() {
				d, err = Delta{}, &UpstreamError{Provider: provider, Timeout: true,
					Message: fmt.Sprintf("sent nothing for %v", idle)}
			}
			timer.Reset(idle)
			if err == nil && d.KeepAlive {
				continue // alive: the limit starts again
			}
			select {
			case ch <- Pumped{d, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, done
}

package gateway

import (
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/batonhq/baton/domain/contextpack"
)

// The tokenizer that counts tokens where a call needs a count and its
// upstream gives none: a prompt's size when routing a mode (NeedsOf), and,
// in the http fronts, a call's tokens when its upstream reports no usage.
// It is built on first use (a few hundred milliseconds for o200k_base): a
// server that never needs a count never builds it.
var counter struct {
	once sync.Once
	tok  contextpack.Tokenizer
}

// CountTokens counts text's tokens with o200k_base, the encoding of
// OpenAI's current models; ok is false when the tokenizer could not be
// built, and the caller falls back on its own bound.
func CountTokens(text string) (n int, ok bool) {
	counter.once.Do(func() { counter.tok, _ = contextpack.NewTokenizer(contextpack.DefaultEncoding) })
	if counter.tok == nil {
		return 0, false
	}
	if text == "" {
		return 0, true
	}
	return len(counter.tok.Encode(text)), true
}

// countChunk is how much text CountTokensUpTo encodes at a time: a long
// prompt is counted a piece at a time, so that the count can stop once it
// has passed its limit (o200k_base takes about half a second a megabyte).
const countChunk = 256 << 10

// CountTokensUpTo is CountTokens for a count that only needs to know
// whether it passes limit: over is true, and n past limit, as soon as the
// pieces counted so far pass it. Pieces end at a newline or a space where
// one is near, where o200k_base's words break anyway.
func CountTokensUpTo(text string, limit int) (n int, over, ok bool) {
	return countUpTo(text, limit, CountTokens)
}

// countUpTo is CountTokensUpTo with any counter.
func countUpTo(text string, limit int, count func(string) (int, bool)) (n int, over, ok bool) {
	if len(text) <= countChunk {
		n, ok = count(text)
		return n, ok && n > limit, ok
	}
	for len(text) > 0 {
		end := min(countChunk, len(text))
		if end < len(text) {
			if i := strings.LastIndexAny(text[end-4096:end], "\n "); i >= 0 {
				end = end - 4096 + i
			}
			for end > 0 && end < len(text) && !utf8.RuneStart(text[end]) {
				end-- // never within a character
			}
			if end == 0 {
				end = min(countChunk, len(text))
			}
		}
		k, ok := count(text[:end])
		if !ok {
			return 0, false, false
		}
		if n += k; n > limit {
			return n, true, true
		}
		text = text[end:]
	}
	return n, false, true
}

// otherTokenizerMargin widens an o200k_base count to cover providers whose
// tokenizers cut the same text finer: Anthropic does not publish Claude's,
// and published comparisons put its counts 5 to 30% above OpenAI's for the
// same text (more for code and JSON than for prose).
const otherTokenizerMargin = 1.25

// EstimateInputTokens estimates the tokens of a request's input for
// routing: every text the provider reads (system prompt, messages, tool
// calls and results, tool and output schemas), counted with o200k_base and
// widened by otherTokenizerMargin, plus WorstTokens' framing and overheads.
// Unlike WorstTokens it is an estimate, not a bound (docs/api.md, Routing);
// without the tokenizer it is WorstTokens' input.
func EstimateInputTokens(req Request) int {
	n, _ := EstimateInputTokensUpTo(req, math.MaxInt)
	return n
}

// EstimateInputTokensUpTo is EstimateInputTokens for a caller that only
// needs to know whether the estimate passes limit: the count stops once
// it has (over), and n is then only past limit, not the estimate.
func EstimateInputTokensUpTo(req Request, limit int) (n int, over bool) {
	bound, _ := WorstTokens(req, nil)
	if len(req.Body) > 0 {
		// The body as sent: its JSON syntax counts too, so this errs high
		// (and a token is at least a byte: never above the bound).
		n, over, ok := CountTokensUpTo(string(req.Body), limit)
		if !ok {
			return bound, bound > limit
		}
		return min(n, bound), over
	}
	var b strings.Builder
	b.WriteString(req.System)
	for _, msg := range req.Messages {
		for _, bl := range msg.Content {
			b.WriteByte('\n')
			b.WriteString(bl.Text)
			b.WriteString(bl.Thinking)
			b.WriteString(bl.Name)
			b.Write(bl.Input)
		}
	}
	for _, t := range req.Tools {
		b.WriteByte('\n')
		b.WriteString(t.Name)
		b.WriteString(t.Description)
		b.Write(t.Schema)
	}
	if req.Output != nil {
		b.WriteByte('\n')
		b.WriteString(req.Output.Name)
		b.WriteString(req.Output.Description)
		b.Write(req.Output.Schema)
	}
	// The framing and overheads are what the bound adds beyond the texts'
	// bytes; keep them as they are.
	overhead := max(bound-b.Len(), 0)
	counted := math.MaxInt // the raw count past which the estimate passes limit
	if limit < math.MaxInt {
		counted = max(int(float64(limit-overhead)/otherTokenizerMargin), 0)
	}
	c, cut, ok := CountTokensUpTo(b.String(), counted)
	if !ok {
		return bound, bound > limit
	}
	n = min(int(float64(c)*otherTokenizerMargin)+overhead, bound)
	if cut {
		n = max(n, limit+1)
	}
	return n, n > limit
}

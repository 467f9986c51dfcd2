package gateway

import (
	"strings"
	"sync"

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
	bound, _ := WorstTokens(req, nil)
	if len(req.Body) > 0 {
		// The body as sent: its JSON syntax counts too, so this errs high.
		if n, ok := CountTokens(string(req.Body)); ok {
			return min(n, bound)
		}
		return bound
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
	n, ok := CountTokens(b.String())
	if !ok {
		return bound
	}
	// The framing and overheads are what the bound adds beyond the texts'
	// bytes; keep them as they are.
	overhead := max(bound-b.Len(), 0)
	return min(int(float64(n)*otherTokenizerMargin)+overhead, bound)
}

// Package local is the offline development provider, kind local.
package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/batonhq/baton/gateway"
)

func init() {
	gateway.RegisterKind("local", gateway.Kind{New: func(gateway.Endpoint) (gateway.Provider, error) { return Provider{}, nil },
		Builtin: true, Development: true, Models: []gateway.ModelSpec{{Name: gateway.LocalModel, ContextTokens: 1 << 20,
			Modes: []string{"cheap", "balanced", "premium", "auto"}, Pricing: &gateway.Price{Source: "free: runs inside Baton"}}}})
}

// Provider is the offline development provider: no key, no network, no
// model. It answers deterministically from the prompt so that `make run`
// and the tests have a provider on any machine. The catalog labels it; it
// is never a stand-in for a real adapter. Its one model is
// gateway.LocalModel.
type Provider struct{}

func (Provider) Name() string     { return "local" }
func (Provider) Kind() string     { return "local" }
func (Provider) Configured() bool { return true }

// answer is what the local model says: the last user message, echoed, cut
// to the token cap (one token per word here).
func (Provider) answer(req gateway.Request) (words []string, stop string, usage gateway.Usage) {
	last := ""
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" {
				last = b.Text
			}
		}
	}
	in := countWords(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			in += countWords(b.Text)
		}
	}
	if req.Output != nil {
		var schema map[string]any
		if json.Unmarshal(req.Output.Schema, &schema) == nil {
			b, _ := json.Marshal(exampleOf(schema, strings.Fields(last), "", 0))
			return []string{string(b)}, gateway.StopEndTurn, gateway.Usage{InputTokens: in, OutputTokens: countWords(string(b))}
		}
	}
	if req.JSONObject {
		b, _ := json.Marshal(map[string]string{"model": "local development model", "youSaid": last})
		return []string{string(b)}, gateway.StopEndTurn, gateway.Usage{InputTokens: in, OutputTokens: countWords(string(b))}
	}
	words = strings.Fields("[local development model] You said: " + last)
	stop = gateway.StopEndTurn
	if req.MaxTokens > 0 && len(words) > req.MaxTokens {
		words, stop = words[:req.MaxTokens], gateway.StopMaxTokens
	}
	return words, stop, gateway.Usage{InputTokens: in, OutputTokens: len(words)}
}

func countWords(s string) int {
	return len(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) }))
}

// Complete implements gateway.Provider.
func (l Provider) Complete(ctx context.Context, req gateway.Request) (*gateway.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	words, stop, u := l.answer(req)
	return &gateway.Response{ID: fmt.Sprintf("local-%d", time.Now().UnixNano()), Model: gateway.LocalModel,
		Content: []gateway.Block{{Type: "text", Text: strings.Join(words, " ")}}, StopReason: stop, NativeStop: stop, Usage: u}, nil
}

// Stream implements gateway.Provider: one word per delta.
func (l Provider) Stream(ctx context.Context, req gateway.Request) (gateway.Stream, error) {
	words, stop, u := l.answer(req)
	return &localStream{ctx: ctx, words: words, stop: stop, usage: u}, nil
}

type localStream struct {
	ctx   context.Context
	words []string
	i     int
	stop  string
	usage gateway.Usage
	told  bool // the input side was reported
	done  bool
}

func (s *localStream) Next() (gateway.Delta, error) {
	if err := s.ctx.Err(); err != nil {
		return gateway.Delta{}, err
	}
	if !s.told { // the input side first, as Anthropic's message_start tells it
		s.told = true
		return gateway.Delta{Usage: &gateway.Usage{InputTokens: s.usage.InputTokens}}, nil
	}
	if s.i < len(s.words) {
		w := s.words[s.i]
		if s.i > 0 {
			w = " " + w
		}
		s.i++
		return gateway.Delta{Text: w}, nil
	}
	if s.done {
		return gateway.Delta{}, io.EOF
	}
	s.done = true
	u := s.usage
	return gateway.Delta{StopReason: s.stop, NativeStop: s.stop, Usage: &u}, nil
}

func (s *localStream) Close() error { return nil }

// ListModels implements gateway.Provider.
func (Provider) ListModels(context.Context) ([]string, error) {
	return []string{gateway.LocalModel}, nil
}

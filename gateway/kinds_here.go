package gateway

import "errors"

// The kinds whose adapters are still in this package.
func init() {
	RegisterKind("openai", Kind{New: newOpenAIKind, Builtin: true, DefaultURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL", KeyEnv: "OPENAI_API_KEY"})
	RegisterKind("openai-compatible", Kind{New: newOpenAIKind})
}

func newOpenAIKind(e Endpoint) (Provider, error) {
	if e.BaseURL == "" {
		return nil, errors.New("baseUrl is required")
	}
	p := NewOpenAI(e.Name, e.Kind, e.BaseURL, e.Key, e.Client)
	if e.KeyEnv != "" {
		p.RequireKey(e.KeyEnv)
	}
	return p, nil
}

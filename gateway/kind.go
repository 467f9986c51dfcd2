package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Endpoint is what a provider is built from: a built-in provider's
// variables, or an entry of the providers file.
type Endpoint struct {
	Name    string
	Kind    string
	BaseURL string // "" when the entry names none
	Key     string
	KeyEnv  string // the variable an entry names for its key; "" for none
	// DefaultServiceTier: ProviderSpec.DefaultServiceTier (a built-in
	// provider's: its Kind.TierEnv), for a kind with ServiceTiers.
	DefaultServiceTier string
	// DefaultInferenceGeo: ProviderSpec.DefaultInferenceGeo (a built-in
	// provider's: its Kind.GeoEnv), for a kind with InferenceGeos.
	DefaultInferenceGeo string
	Client              *http.Client
}

// Kind is a kind of provider: how to build one, and the provider every
// catalog has of it, if any.
type Kind struct {
	// New builds a provider; its error says what the endpoint lacks.
	New func(Endpoint) (Provider, error)
	// Builtin: every catalog has a provider named after the kind, its base
	// URL from BaseURLEnv (else DefaultURL), its key from KeyEnv, its
	// models the built-in table's.
	Builtin    bool
	Models     []ModelSpec // a built-in provider's models and list prices
	DefaultURL string
	BaseURLEnv string
	KeyEnv     string
	// MaxTokens is the output cap the kind's adapter sends for a request
	// to one of its models, where that is not the request's own (the
	// Messages API requires one; a thinking budget may raise it): the
	// budget's worst case holds it. Nil: the request's cap.
	MaxTokens func(Request) int
	// ServiceTiers: the kind takes OpenAI's service_tier, and a providers
	// entry may name its account's default (ProviderSpec).
	ServiceTiers bool
	// TierEnv names the variable giving a built-in provider's
	// DefaultServiceTier.
	TierEnv string
	// InferenceGeos: the kind takes Anthropic's inference_geo, and a
	// providers entry may name its workspace's default (ProviderSpec);
	// GeoEnv names the variable giving a built-in provider's.
	InferenceGeos bool
	GeoEnv        string
	// Development: the offline provider, serving LocalModel; built in
	// only, never declared in a providers file.
	Development bool
	// CapBoundsOutput: the request's token cap bounds all the output the
	// provider bills, reasoning included (OpenAI's own API). Without it,
	// billed output is held to the model's context instead
	// (BilledOutputBound): DeepSeek's R1 capped only the answer after its
	// reasoning, and Anthropic's thinking interleaved with tool calls may
	// pass max_tokens.
	CapBoundsOutput bool
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// RegisterKind makes a provider kind known to catalogs. Each kind's folder
// registers itself in an init; gateway/kinds imports them all.
func RegisterKind(name string, k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if k.New == nil {
		panic("gateway: RegisterKind " + name + ": no New")
	}
	if _, dup := kinds[name]; dup {
		panic("gateway: RegisterKind " + name + ": registered twice")
	}
	kinds[name] = k
}

// lookupKind returns a registered kind.
func lookupKind(name string) (Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for name := range kinds {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// unknownKind is the error for a kind no folder registered.
func unknownKind(kind string) error {
	var known []string
	for _, name := range Kinds() {
		if k, _ := lookupKind(name); !k.Development {
			known = append(known, name)
		}
	}
	if len(known) == 0 {
		return fmt.Errorf("kind %q is not registered: no provider kind is (import github.com/batonhq/baton/gateway/kinds)", kind)
	}
	return fmt.Errorf("kind %q is not one of %s", kind, strings.Join(known, ", "))
}

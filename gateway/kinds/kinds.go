// Package kinds registers every provider kind Baton has: import it for its
// effect wherever a catalog is built.
package kinds

import (
	_ "github.com/batonhq/baton/gateway/anthropic"
	_ "github.com/batonhq/baton/gateway/local"
	_ "github.com/batonhq/baton/gateway/openai"
)

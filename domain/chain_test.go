package domain

import (
	"strings"
	"testing"
)

// Nesting is bounded as encoding/json bounds it: a tampered event nested a
// million deep is refused, not walked until the verifier's stack runs out.
func TestCanonicalJSONBoundsNesting(t *testing.T) {
	for _, c := range []struct {
		depth int
		ok    bool
	}{{100, true}, {maxDepth, true}, {maxDepth + 1, false}, {1_000_000, false}} {
		doc := strings.Repeat("[", c.depth) + strings.Repeat("]", c.depth)
		_, err := CanonicalJSON([]byte(doc))
		if (err == nil) != c.ok {
			t.Fatalf("depth %d: %v", c.depth, err)
		}
	}
	if _, err := CanonicalJSON([]byte(`{"a":1,"b":{"a":2,"a":3}}`)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a duplicate key in a nested object: %v", err)
	}
	if _, err := CanonicalJSON([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Fatal("a second document was accepted")
	}
}

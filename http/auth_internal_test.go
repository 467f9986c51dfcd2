package http

import (
	"fmt"
	"testing"
)

// A refused key is remembered (so repeating it costs no store round trip),
// and the memory stays bounded.
func TestUnknownKeysRemembersBoundedly(t *testing.T) {
	var u unknownKeys
	if u.recent("h1") {
		t.Fatal("an unseen key is recent")
	}
	u.add("h1")
	if !u.recent("h1") || u.recent("h2") {
		t.Fatal("after add: h1 must be recent, h2 not")
	}
	for i := range unknownKeysMax + 5 {
		u.add(fmt.Sprint("k", i))
	}
	if n := len(u.seen); n > unknownKeysMax {
		t.Fatalf("%d remembered, bound %d", n, unknownKeysMax)
	}
}

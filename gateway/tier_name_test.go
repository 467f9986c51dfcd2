package gateway

import (
	"testing"
	"unsafe"
)

// TierName keeps no view of the bytes it was given, and the names OpenAI
// sends on every chunk cost no allocation.
func TestTierNameHoldsNoView(t *testing.T) {
	b := []byte("on_demand")
	name := TierName(unsafe.String(&b[0], len(b)))
	copy(b, "xxxxxxxxx")
	if name != "on_demand" {
		t.Fatalf("the name follows the bytes it was read from: %q", name)
	}
	d := []byte("default")
	view := unsafe.String(&d[0], len(d))
	if n := testing.AllocsPerRun(100, func() { name = TierName(view) }); n != 0 || name != "default" {
		t.Fatalf("a known name: %v allocations, %q", n, name)
	}
}

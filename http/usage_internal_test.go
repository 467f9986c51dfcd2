package http

import (
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/gateway"
)

// The server's own usage writer takes the configured window, and the
// gateway's default when none is set.
func TestUsageLingerReachesTheWriter(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, c := range []struct{ set, want time.Duration }{{0, gateway.DefaultUsageLinger}, {3 * time.Millisecond, 3 * time.Millisecond}} {
		s := NewServer(Config{Store: store, UsageLinger: c.set})
		if got := s.usage.Linger; got != c.want {
			t.Errorf("UsageLinger %v: the writer lingers %v, want %v", c.set, got, c.want)
		}
		s.Close()
	}
}

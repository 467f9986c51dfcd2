package bolt_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/storetest"
)

func TestMain(m *testing.M) {
	if runChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		dir := t.TempDir()
		return func() (eventstore.Store, error) { return bolt.Open(dir, bolt.Options{}) }
	})
}

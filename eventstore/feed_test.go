package eventstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// FeedPages walks the whole feed in pages, stops when the loop does, and
// ends with the store's error.
func TestFeedPages(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 5 {
		if _, err := st.Append(ctx, fmt.Sprintf("s-%d", i), eventstore.NoStream(), eventstore.NewEvent("E", json.RawMessage(`{}`), eventstore.Metadata{})); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	for page, err := range eventstore.FeedPages(ctx, st, 2) {
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
	}
	if fmt.Sprint(sizes) != "[2 2 1]" {
		t.Fatalf("pages of %v, want [2 2 1]", sizes)
	}
	n := 0
	for range eventstore.FeedPages(ctx, st, 2) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d pages after a break", n)
	}
	st.Close()
	var last error
	for _, err := range eventstore.FeedPages(ctx, st, 2) {
		last = err
	}
	if last == nil {
		t.Fatal("a closed store's feed ended without an error")
	}
}

package eventstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// An append's error says whether it may have committed: unavailable stores
// and contexts that ended while it waited may have; refusals have not.
func TestMayHaveCommitted(t *testing.T) {
	for err, want := range map[error]bool{
		fmt.Errorf("kurrent: append: %w: reset", ErrUnavailable):                             true,
		fmt.Errorf("%w (outcome unknown: %w): fsync", ErrFailed, ErrUnavailable):             true,
		fmt.Errorf("append: outcome unknown, retry with the same ids: %w", context.Canceled): true,
		context.DeadlineExceeded:   true,
		ErrConflict:                false,
		ErrInvalidEvent:            false,
		ErrFailed:                  false,
		errors.New("disk on fire"): false,
	} {
		if got := MayHaveCommitted(err); got != want {
			t.Errorf("MayHaveCommitted(%v) = %v, want %v", err, got, want)
		}
	}
}

package http_test

import (
	"sync"

	"github.com/batonhq/baton/domain/secrets"
	batonhttp "github.com/batonhq/baton/http"
)

var (
	scannerOnce sync.Once
	sharedScan  *secrets.Scanner
	scanErr     error
)

// newTestScanner builds the real scanner once per test binary.
func newTestScanner() (batonhttp.SecretScanner, error) {
	scannerOnce.Do(func() { sharedScan, scanErr = secrets.New() })
	return sharedScan, scanErr
}

//go:build !unix

package bolt_test

import (
	"errors"
	"os/exec"
	"testing"
)

func asNobody(t *testing.T, _ *exec.Cmd) {
	t.Skip("running a child as another user needs a Unix system")
}

func limitFileSize(uint64) error {
	return errors.New("a file-size limit needs a Unix system")
}

func skipUnlessUnix(t *testing.T) { t.Skip("needs a Unix system") }

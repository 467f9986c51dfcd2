//go:build !unix

package translog_test

import (
	"os/exec"
	"testing"
)

func asNobody(t *testing.T, _ *exec.Cmd) {
	t.Skip("running a child as another user needs a Unix system")
}

//go:build !unix

package main

import (
	"os"
	"time"
)

// stopGroup: elsewhere the command alone is killed.
func stopGroup(p *os.Process, grace time.Duration) { p.Kill() }

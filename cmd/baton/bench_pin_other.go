//go:build !linux

package main

import "errors"

func pinTo(pid int, cpus []int) error { return errors.ErrUnsupported }

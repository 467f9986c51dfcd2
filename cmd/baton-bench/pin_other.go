//go:build !linux

package main

import "errors"

func pinTo(pid int, cpus []int) (restore func() error, err error) { return nil, errors.ErrUnsupported }

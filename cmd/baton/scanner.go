package main

import (
	"github.com/batonhq/baton/domain/secrets"
	batonhttp "github.com/batonhq/baton/http"
)

func newScanner() (batonhttp.SecretScanner, error) { return secrets.New() }

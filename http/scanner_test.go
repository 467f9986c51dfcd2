package http_test

import batonhttp "github.com/batonhq/baton/http"

func newTestScanner() (batonhttp.SecretScanner, error) { return nil, nil }

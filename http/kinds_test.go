package http_test

// The catalogs of the tests have the real provider kinds, as the binary's.
import _ "github.com/batonhq/baton/gateway/kinds"

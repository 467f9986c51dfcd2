package gateway_test

// The catalogs of this package's tests have the real provider kinds. (An
// external test file: gateway/kinds imports gateway.)
import _ "github.com/batonhq/baton/gateway/kinds"

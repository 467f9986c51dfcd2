// Package gateway routes model calls to providers: the catalog, pricing,
// routing, usage and cost control, and structured generation.
package gateway

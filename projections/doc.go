// Package projections builds Baton's read models from the event store's
// global feed, each update written together with its checkpoint, so a read
// model can always be rebuilt from position zero.
package projections

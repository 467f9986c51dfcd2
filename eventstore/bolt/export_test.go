package bolt

// SmallJournal makes every journal opened from now on start at 64 KiB and
// start over at 256 KiB, so that crash tests kill writers across many
// restarts of the journal. It returns the undo.
func SmallJournal() (undo func()) {
	a, b := journalMinCap, journalWrapCap
	journalMinCap, journalWrapCap = 64<<10, 256<<10
	return func() { journalMinCap, journalWrapCap = a, b }
}

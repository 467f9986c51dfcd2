package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Run phases, as the state file records them.
const (
	phaseRunning  = "running"  // the command was started (or is to be started again)
	phaseFinished = "finished" // the command ended; its outcome is to be reported
	phaseReported = "reported" // the result was recorded
)

// Run is one handoff this executor took: what it must remember across a
// restart to go on with the same executorRunId and idempotency keys.
type Run struct {
	HandoffID     string   `json:"handoffId"`
	ExecutorRunID string   `json:"executorRunId"`
	Protocol      string   `json:"executorProtocol"`
	Phase         string   `json:"phase"`
	ExitCode      int      `json:"exitCode"`
	Ended         string   `json:"ended,omitempty"` // how a command that failed without an exit status of its own ended ("signal: killed"), or that it timed out
	Output        string   `json:"output,omitempty"`
	Receipts      []string `json:"receipts,omitempty"` // "<callback> <seq> <hash>" of each answer
	Note          string   `json:"note,omitempty"`
	// ProofShort: Baton refused the result because the proof policy asks
	// for artifact types the command does not produce; it goes as FAILED,
	// under its own key.
	ProofShort bool `json:"proofShort,omitempty"`
	// Group is the process group the command runs in while the run is
	// "running" (Linux): a start after a crash kills what is left of it
	// before the command runs again.
	Group *ProcGroup `json:"processGroup,omitempty"`
}

// ProcGroup identifies a command's process group, so that a later start
// can tell what is left of it from a later group that reuses its number.
type ProcGroup struct {
	ID        int    `json:"id"`
	StartTime uint64 `json:"startTime"` // the leader's, in clock ticks since boot
	BootID    string `json:"bootId"`
}

// released reports whether the run was given up because Baton released
// it (it missed its lease): the handoff may then be taken by a new run.
// A callback refused lease_expired was refused before the release was
// recorded (Baton back from an outage, its timer not yet run): the
// release that follows frees the handoff all the same, and taken for a
// run given up for good, it was never taken again. So is a run given up
// because another run had claimed the handoff (another executor of the
// same name): when that one is released (its executor died), this
// executor may take the handoff; it waited for the dead one instead.
func (r Run) released() bool {
	return r.Phase == phaseReported && (strings.Contains(r.Note, "executor_run_released") ||
		strings.Contains(r.Note, "lease_expired") || strings.Contains(r.Note, "executor_run_mismatch"))
}

// State is the executor's memory: its runs and where its event stream
// stopped. It is written to one JSON file, replaced atomically on every
// change, so a crash leaves the last whole state. A reported run goes to
// a second file, <path>.reported, one JSON line appended per run, and
// leaves the first: kept there, every run ever reported was rewritten and
// synced at every event (9 MB, a tenth of a second a write, after 20,000).
type State struct {
	path string
	mu   sync.Mutex
	data struct {
		LastEventID string          `json:"lastEventId,omitempty"`
		Runs        map[string]*Run `json:"runs"`
	}
	logged map[string]string // the run id of each handoff's run in the reported file
	order  map[string]int64  // the place of each handoff's last line in the reported file
	lines  int64             // lines appended to the reported file
}

// keepReported is how many reported runs, the latest, the reported file
// keeps (and the executor holds in memory). Past twice as many, the older
// ones go to <path>.reported.archive, which the executor never reads:
// kept whole, every run ever reported was read and held at every start.
// A handoff that is done is not acted on again whether or not its run is
// remembered (its contract is no longer approval_decided); the receipts
// stay in the archive, as evidence.
var keepReported = 10_000

// reportedPath is where the reported runs are kept.
func (s *State) reportedPath() string { return s.path + ".reported" }

// archivePath is where the reported runs past keepReported go.
func (s *State) archivePath() string { return s.reportedPath() + ".archive" }

func openState(path string) (*State, error) {
	s := &State{path: path, logged: map[string]string{}, order: map[string]int64{}}
	s.data.Runs = map[string]*Run{}
	reported, err := s.readReported()
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", s.reportedPath(), err)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Written at once: a state file that cannot be written is a
		// configuration error to stop on, not one found at the first run
		// taken (which then could not be remembered).
		if err := s.save(); err != nil {
			return nil, fmt.Errorf("state file %s: %w", path, err)
		}
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.data); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if s.data.Runs == nil {
		s.data.Runs = map[string]*Run{}
	}
	// A run in both files was reported, and the executor stopped before
	// the state file was written without it: the reported file is later.
	// Another run of the same handoff (taken again after a release) is
	// later than the reported one.
	var move []Run
	for id, r := range reported {
		if cur, ok := s.data.Runs[id]; !ok || cur.ExecutorRunID == r.ExecutorRunID {
			s.data.Runs[id] = r
		}
	}
	for id, r := range s.data.Runs {
		if r.Phase == phaseReported && s.logged[id] != r.ExecutorRunID {
			move = append(move, *r) // reported runs of a state file of before the reported file
		}
	}
	if len(move) > 0 {
		if err := s.appendReported(move...); err != nil {
			return nil, fmt.Errorf("state file %s: %w", s.reportedPath(), err)
		}
		if err := s.save(); err != nil {
			return nil, fmt.Errorf("state file %s: %w", path, err)
		}
	}
	if err := s.compactReported(); err != nil {
		return nil, fmt.Errorf("state file %s: %w", s.reportedPath(), err)
	}
	return s, nil
}

// compactReported moves the reported runs older than the keepReported
// latest to the archive, once there are twice as many, and rewrites the
// reported file with the rest, one line per handoff. The archive is
// appended and synced first: a crash before the reported file is replaced
// leaves those runs in both, and the next compaction archives them again.
func (s *State) compactReported() error {
	if len(s.logged) <= 2*keepReported {
		return nil
	}
	b, err := os.ReadFile(s.reportedPath())
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(s.order))
	for id := range s.order {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(s.order[a], s.order[b]) })
	old := map[string]bool{}
	for _, id := range ids[:len(ids)-keepReported] {
		old[id] = true
	}
	var keep, archive bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		var r Run
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil {
			continue
		}
		if !old[r.HandoffID] && s.logged[r.HandoffID] == r.ExecutorRunID {
			keep.Write(line)
		} else {
			archive.Write(line) // an older run, or an earlier run of a handoff taken again
		}
	}
	f, err := os.OpenFile(s.archivePath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(archive.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := replaceFile(s.reportedPath(), keep.Bytes()); err != nil {
		return err
	}
	for id := range old {
		if r := s.data.Runs[id]; r != nil && r.Phase == phaseReported && r.ExecutorRunID == s.logged[id] {
			delete(s.data.Runs, id) // a later run of the handoff, under way, stays
		}
		delete(s.logged, id)
		delete(s.order, id)
	}
	return nil
}

// readReported reads the reported file. A last line without its end is
// one cut by a crash as it was appended: it is dropped (its run is still
// in the state file, and is reported again under the same keys).
func (s *State) readReported() (map[string]*Run, error) {
	out := map[string]*Run{}
	b, err := os.ReadFile(s.reportedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1]
		if err := os.Truncate(s.reportedPath(), int64(len(b))); err != nil {
			return nil, err
		}
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r Run
		if err := json.Unmarshal(line, &r); err != nil || r.HandoffID == "" {
			return nil, fmt.Errorf("line %d is not a run: %.80q", n+1, line)
		}
		out[r.HandoffID] = &r
		s.logged[r.HandoffID] = r.ExecutorRunID
		s.lines++
		s.order[r.HandoffID] = s.lines
	}
	return out, nil
}

// appendReported appends runs to the reported file and syncs it.
func (s *State) appendReported(runs ...Run) error {
	var buf bytes.Buffer
	for _, r := range runs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	}
	_, statErr := os.Stat(s.reportedPath())
	f, err := os.OpenFile(s.reportedPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if statErr != nil {
		syncDir(filepath.Dir(s.path)) // a new file lasts once its directory does
	}
	for _, r := range runs {
		s.logged[r.HandoffID] = r.ExecutorRunID
		s.lines++
		s.order[r.HandoffID] = s.lines
	}
	return nil
}

func (s *State) save() error {
	// The runs of the reported file stay out of it.
	var out struct {
		LastEventID string          `json:"lastEventId,omitempty"`
		Runs        map[string]*Run `json:"runs"`
	}
	out.LastEventID, out.Runs = s.data.LastEventID, map[string]*Run{}
	for id, r := range s.data.Runs {
		if r.Phase != phaseReported || s.logged[id] != r.ExecutorRunID {
			out.Runs[id] = r
		}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return err
	}
	return replaceFile(s.path, b)
}

// replaceFile replaces the file at path with b atomically, synced.
func replaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename lasts through a power cut only once the directory is on
	// disk: the state before it could come back, a run whose first
	// callback Baton recorded unknown to it. Best effort: the file is
	// replaced already, and some systems cannot sync a directory.
	syncDir(filepath.Dir(path))
	return nil
}

var syncDir = func(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Run returns a copy of the run of handoff id, if this executor took it.
func (s *State) Run(id string) (Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.data.Runs[id]
	if !ok {
		return Run{}, false
	}
	return *r, true
}

// Put records r and writes the file before returning.
func (s *State) Put(r Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.data.Runs[r.HandoffID]
	if r.Phase == phaseReported {
		// Appended first: a crash before the state file is written
		// leaves the run in both, and the reported file (its last line
		// for the handoff) wins.
		if err := s.appendReported(r); err != nil {
			return err
		}
	}
	s.data.Runs[r.HandoffID] = &r
	if err := s.save(); err != nil {
		// Memory stays as the file is.
		if had {
			s.data.Runs[r.HandoffID] = old
		} else {
			delete(s.data.Runs, r.HandoffID)
		}
		return err
	}
	if r.Phase == phaseReported {
		// The run is reported and saved: a compaction that fails leaves
		// both files as they were, to be compacted at a later report.
		s.compactReported()
	}
	return nil
}

// Unfinished lists the runs not yet reported.
func (s *State) Unfinished() []Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Run
	for _, r := range s.data.Runs {
		if r.Phase != phaseReported {
			out = append(out, *r)
		}
	}
	return out
}

// LastEventID is where the event stream resumes.
func (s *State) LastEventID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data.LastEventID
}

// SetLastEventID records the id of the last event handled.
func (s *State) SetLastEventID(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.data.LastEventID == id {
		return nil
	}
	old := s.data.LastEventID
	s.data.LastEventID = id
	if err := s.save(); err != nil {
		s.data.LastEventID = old // memory stays as the file is
		return err
	}
	return nil
}

package translog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// SignedFileName is the file, beside the log's, that records the latest
// checkpoint each key signed. The log's file is derived data, rebuilt from
// the store when it is deleted; after a restore from a backup the store no
// longer holds what the key signed past the backup, and only this file
// tells that a rebuilt log would sign a second tree (docs/audit.md).
const SignedFileName = "translog.signed"

// signedRecords maps a verifier key to the signed note of the latest
// checkpoint signed with its key.
type signedRecords map[string]string

func readSigned(path string) (signedRecords, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return signedRecords{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transparency log: %w", err)
	}
	recs := signedRecords{}
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("transparency log: %s: %w", path, err)
	}
	return recs, nil
}

// recordSigned keeps signed as the latest checkpoint of this log's key,
// durably (a new file fsynced, renamed over the old, the directory
// fsynced), before the claim that publishes it is appended.
func (l *Log) recordSigned(signed []byte) error {
	if l.signedAt == "" {
		return nil
	}
	l.signedMu.Lock()
	defer l.signedMu.Unlock()
	if l.signed == nil {
		// Read once: only this process writes the file (its log's file
		// is locked), so the records it holds are the ones written here.
		recs, err := readSigned(l.signedAt)
		if err != nil {
			return err
		}
		l.signed = recs
	}
	l.signed[l.vkey] = string(signed)
	b, _ := json.MarshalIndent(l.signed, "", "  ")
	tmp := l.signedAt + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, l.signedAt)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(filepath.Dir(l.signedAt)); err == nil {
			err = errors.Join(d.Sync(), d.Close())
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("transparency log: recording the checkpoint signed: %w", err)
	}
	return nil
}

// UnheldSigned is the first checkpoint recorded in the file at path
// (SignedFile) that this log does not hold and whose signing would fork:
// one of this key (Own), or one of this origin signed with another key
// (a new key of an old origin would sign a second tree of its log). Nil
// without a verifier key, or when the file does not exist.
func (l *Log) UnheldSigned(path string) (*Fork, error) {
	if l.verifier == nil {
		return nil, nil
	}
	recs, err := readSigned(path)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var other *Fork
	for _, k := range keys {
		signed := []byte(recs[k])
		if cp, err := l.openCheckpoint(signed); err == nil && (cp.Origin == l.origin || l.anyOrigin) {
			if f := l.unheld(cp); f != nil {
				f.Own = true
				return f, nil
			}
			continue
		}
		if cp, err := ParseCheckpoint(noteText(signed)); err == nil && cp.Origin == l.origin && other == nil {
			other = l.unheld(cp)
		}
	}
	return other, nil
}

package kurrenttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type streamsService struct {
	streams.UnimplementedStreamsServer
	s *Server
}

// proposed is an event of an append request.
type proposed struct {
	id    uuid.UUID
	typ   string
	ctype string
	data  []byte
	meta  []byte
}

// noStream is the server's ExpectedVersion.NoStream and the "current
// version" of a stream without events.
const noStream = -1

// decision is the outcome of the commit check.
type decision int

const (
	commitOK decision = iota
	commitIdempotent
	commitWrongExpectedVersion
)

func (a *streamsService) Append(stream streams.Streams_AppendServer) error {
	s := a.s
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil {
		return status.Error(codes.InvalidArgument, "the first message of an append must carry its options")
	}
	call := AppendCall{Stream: string(opts.GetStreamIdentifier().GetStreamName())}
	switch e := opts.GetExpectedStreamRevision().(type) {
	case *streams.AppendReq_Options_Any:
		call.Expected = ExpectAny
	case *streams.AppendReq_Options_NoStream:
		call.Expected = ExpectNoStream
	case *streams.AppendReq_Options_StreamExists:
		call.Expected = ExpectStreamExists
	case *streams.AppendReq_Options_Revision:
		call.Expected, call.Revision = ExpectRevision, e.Revision
	}

	var (
		evs  []proposed
		size int
	)
	fail := func(err error) error {
		call.Outcome = err.Error()
		s.record(call)
		return err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(err)
		}
		m := msg.GetProposedMessage()
		if m == nil {
			return fail(status.Error(codes.InvalidArgument, "an append carries its options once, then proposed messages"))
		}
		id, err := parseUUID(m.GetId())
		if err != nil {
			return fail(status.Errorf(codes.InvalidArgument, "event id: %v", err))
		}
		call.EventIDs = append(call.EventIDs, id)
		typ, ok := m.GetMetadata()["type"]
		if !ok {
			return fail(requiredMetadata("type"))
		}
		ctype, ok := m.GetMetadata()["content-type"]
		if !ok {
			return fail(requiredMetadata("content-type"))
		}
		size += len(m.GetData()) + len(m.GetCustomMetadata()) + 2*len(utf16.Encode([]rune(typ)))
		if size > s.opts.MaxAppendSize {
			// The server names its exception in a trailer, as here.
			stream.SetTrailer(metadata.Pairs("exception", "maximum-append-size-exceeded",
				"maximum-append-size", strconv.Itoa(s.opts.MaxAppendSize)))
			return fail(maxAppendSizeExceeded(s.opts.MaxAppendSize))
		}
		evs = append(evs, proposed{id: id, typ: typ, ctype: ctype, data: m.GetData(), meta: m.GetCustomMetadata()})
	}
	if s.refuseAsFollower(stream.Context(), stream.SetTrailer) {
		call.Outcome = "not_leader"
		s.record(call)
		return notLeader()
	}
	if call.Expected == ExpectMissing {
		return fail(status.Error(codes.InvalidArgument, "'None' is not a valid expected stream revision"))
	}
	if call.Stream == "" {
		return fail(status.Error(codes.InvalidArgument, "the stream name is empty"))
	}

	resp := s.append(&call, evs)
	s.record(call)
	return stream.SendAndClose(resp)
}

func (s *Server) record(call AppendCall) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
}

// append runs the commit check and writes; it sets call.Outcome.
func (s *Server) append(call *AppendCall, evs []proposed) *streams.AppendResp {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.streams[call.Stream]
	cur := int64(len(recs)) - 1
	ids := make([]uuid.UUID, len(evs))
	for i, ev := range evs {
		ids[i] = ev.id
	}
	dec, last := s.check(call, cur, ids)
	switch dec {
	case commitWrongExpectedVersion:
		call.Outcome = "wrong_expected_version"
		return wrongExpectedVersion(call, cur)
	case commitIdempotent:
		call.Outcome = "idempotent"
		resp := success(last)
		if s.opts.NoIdempotentPosition {
			resp.GetSuccess().PositionOption = &streams.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}}
		}
		return resp
	}
	if len(evs) == 0 {
		call.Outcome = "written"
		if cur == noStream {
			return &streams.AppendResp{Result: &streams.AppendResp_Success_{Success: &streams.AppendResp_Success{
				CurrentRevisionOption: &streams.AppendResp_Success_NoStream{NoStream: &shared.Empty{}},
				PositionOption:        &streams.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}},
			}}}
		}
		return success(recs[cur])
	}
	last = s.write(call.Stream, evs)
	call.Outcome = "written"
	s.appends++
	if n := s.opts.SystemEventEvery; n > 0 && s.appends%n == 0 {
		s.writeSystem("$stats-kurrenttest", "$statsCollected", fmt.Sprintf(`{"appends":%d}`, s.appends))
	}
	return success(last)
}

// check is the server's commit check (IndexWriter.CheckCommit) for a stream
// whose last event number is cur (noStream when it has none). For an
// idempotent append it returns the last of the already written events.
func (s *Server) check(call *AppendCall, cur int64, ids []uuid.UUID) (decision, *record) {
	recs := s.streams[call.Stream]
	var expected int64
	switch call.Expected {
	case ExpectStreamExists:
		// A stream with metadata but no events "exists" too.
		if cur == noStream && len(s.streams["$$"+call.Stream]) == 0 {
			return commitWrongExpectedVersion, nil
		}
		fallthrough
	case ExpectAny:
		// Idempotency by id: the server asks its cache of committed ids.
		var last *record
		for i, id := range ids {
			r := s.ids[id]
			if r == nil || r.stream != call.Stream {
				if i == 0 {
					return commitOK, nil
				}
				return commitWrongExpectedVersion, nil // corrupted idempotency
			}
			last = r
		}
		if last == nil {
			return commitOK, nil
		}
		return commitIdempotent, last
	case ExpectNoStream:
		expected = noStream
	case ExpectRevision:
		if call.Revision > 1<<62 {
			return commitWrongExpectedVersion, nil
		}
		expected = int64(call.Revision)
	}
	switch {
	case expected > cur:
		return commitWrongExpectedVersion, nil
	case expected == cur:
		return commitOK, nil
	}
	// Writing earlier than the end: a retry if every event is already there.
	if len(ids) == 0 {
		return commitWrongExpectedVersion, nil
	}
	var last *record
	for i, id := range ids {
		n := expected + 1 + int64(i)
		if n > cur || recs[n].id != id {
			// A first event that differs is a plain conflict; a later one
			// is corrupted idempotency, which the server reports the same.
			return commitWrongExpectedVersion, nil
		}
		last = recs[n]
	}
	return commitIdempotent, last
}

func success(last *record) *streams.AppendResp {
	return &streams.AppendResp{Result: &streams.AppendResp_Success_{Success: &streams.AppendResp_Success{
		CurrentRevisionOption: &streams.AppendResp_Success_CurrentRevision{CurrentRevision: last.number},
		PositionOption: &streams.AppendResp_Success_Position{Position: &streams.AppendResp_Position{
			CommitPosition: last.pos, PreparePosition: last.pos,
		}},
	}}}
}

func wrongExpectedVersion(call *AppendCall, cur int64) *streams.AppendResp {
	w := &streams.AppendResp_WrongExpectedVersion{}
	switch call.Expected {
	case ExpectAny:
		w.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedAny{ExpectedAny: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &streams.AppendResp_WrongExpectedVersion_Any_20_6_0{Any_20_6_0: &shared.Empty{}}
	case ExpectStreamExists:
		w.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &streams.AppendResp_WrongExpectedVersion_StreamExists_20_6_0{StreamExists_20_6_0: &shared.Empty{}}
	case ExpectNoStream:
		w.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &streams.AppendResp_WrongExpectedVersion_ExpectedRevision_20_6_0{ExpectedRevision_20_6_0: ^uint64(0)}
	case ExpectRevision:
		w.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: call.Revision}
		w.ExpectedRevisionOption_20_6_0 = &streams.AppendResp_WrongExpectedVersion_ExpectedRevision_20_6_0{ExpectedRevision_20_6_0: call.Revision}
	}
	if cur == noStream {
		w.CurrentRevisionOption = &streams.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
		w.CurrentRevisionOption_20_6_0 = &streams.AppendResp_WrongExpectedVersion_NoStream_20_6_0{NoStream_20_6_0: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &streams.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(cur)}
		w.CurrentRevisionOption_20_6_0 = &streams.AppendResp_WrongExpectedVersion_CurrentRevision_20_6_0{CurrentRevision_20_6_0: uint64(cur)}
	}
	return &streams.AppendResp{Result: &streams.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: w}}
}

func requiredMetadata(name string) error {
	return status.Errorf(codes.InvalidArgument, "Required Metadata Property '%s' is missing", name)
}

func maxAppendSizeExceeded(limit int) error {
	return status.Errorf(codes.InvalidArgument, "Maximum Append Size of %d Exceeded.", limit)
}

func parseUUID(u *shared.UUID) (uuid.UUID, error) {
	switch v := u.GetValue().(type) {
	case *shared.UUID_Structured_:
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(v.Structured.GetMostSignificantBits()))
		binary.BigEndian.PutUint64(b[8:], uint64(v.Structured.GetLeastSignificantBits()))
		return uuid.UUID(b), nil
	case *shared.UUID_String_:
		return uuid.Parse(v.String_)
	}
	return uuid.Nil, errors.New("missing")
}

func uuidDTO(id uuid.UUID) *shared.UUID {
	return &shared.UUID{Value: &shared.UUID_Structured_{Structured: &shared.UUID_Structured{
		MostSignificantBits:  int64(binary.BigEndian.Uint64(id[:8])),
		LeastSignificantBits: int64(binary.BigEndian.Uint64(id[8:])),
	}}}
}

package kurrenttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/gossip"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultMaxAppendSize is KurrentDB's default --max-append-size.
const DefaultMaxAppendSize = 1 << 20

// firstLogPosition is where the first event goes: the log of a real node
// starts with an epoch record, so no event sits at position 0 (which clients
// use to mean "the start").
const firstLogPosition = 256

// recordOverhead approximates the bytes a prepare record spends besides its
// stream, type, data and metadata; it only makes positions look like log
// offsets.
const recordOverhead = 90

// Options configure a Server. The zero value behaves like a fresh node with
// default settings.
type Options struct {
	// MaxAppendSize caps the bytes of one append (default
	// DefaultMaxAppendSize).
	MaxAppendSize int
	// Empty starts with an empty log, without the system events a fresh node
	// has written before any client connects.
	Empty bool
	// SystemEventEvery, when positive, writes a system event
	// ("$statsCollected" in "$stats-kurrenttest") after every that many
	// client appends, so that readers of $all meet system events between
	// their own.
	SystemEventEvery int
	// NoIdempotentPosition answers idempotent appends without a position,
	// as older servers did (before they reported the log position of the
	// already written events).
	NoIdempotentPosition bool
	// Version is what GetSupportedMethods reports (default "24.10.0").
	Version string
	// Now stamps the "created" time of events (default time.Now).
	Now func() time.Time
}

// Server is the test double. Create it with New (or Start), serve it with
// Serve; it is safe for concurrent use.
type Server struct {
	opts Options

	mu       sync.Mutex
	log      []*record            // every event in $all order
	streams  map[string][]*record // stream -> its events by revision
	ids      map[uuid.UUID]*record
	nextPos  uint64
	appends  int           // client appends that wrote events
	changed  chan struct{} // closed and replaced whenever the log grows
	calls    []AppendCall
	subs     map[*subscription]struct{}
	dropped  int
	asFollow int // calls still to refuse as a follower (AnswerNotLeader)
	serving  *grpc.Server
	addr     string
	stopping bool
}

type record struct {
	id      uuid.UUID
	stream  string
	number  uint64
	typ     string
	ctype   string
	data    []byte
	meta    []byte
	created int64 // .NET ticks (100 ns) since the Unix epoch
	pos     uint64
}

// New returns a Server that is not yet serving.
func New(opts Options) *Server {
	if opts.MaxAppendSize <= 0 {
		opts.MaxAppendSize = DefaultMaxAppendSize
	}
	if opts.Version == "" {
		opts.Version = "24.10.0"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts:    opts,
		streams: map[string][]*record{},
		ids:     map[uuid.UUID]*record{},
		nextPos: firstLogPosition,
		changed: make(chan struct{}),
		subs:    map[*subscription]struct{}{},
	}
	if !opts.Empty {
		// What a fresh node has written before the first client appends.
		s.mu.Lock()
		s.writeSystem("$users", "$UserCreated", `{"LoginName":"admin"}`)
		s.writeSystem("$user-admin", "$User", `{"LoginName":"admin","FullName":"KurrentDB Administrator"}`)
		s.writeSystem("$$$scavenges", "$metadata", `{"$maxAge":2592000}`)
		s.mu.Unlock()
	}
	return s
}

// Start listens on a free loopback port and serves in the background. Stop
// the server when done.
func Start(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := New(opts)
	s.serveBackground(ln)
	return s, nil
}

func (s *Server) serveBackground(ln net.Listener) {
	ready := make(chan struct{})
	go func() {
		s.serve(ln, ready)
	}()
	<-ready
}

// Serve runs a new Server with opts on ln until the listener fails. It is the
// whole of a standalone double: a main package needs only to listen and call
// it.
func Serve(ln net.Listener, opts Options) error {
	return New(opts).Serve(ln)
}

// Serve answers gRPC on ln until Stop is called (it then returns nil). It may
// be called again after Stop: the data survives, as it would across a restart
// of a real node.
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(ln, nil)
}

func (s *Server) serve(ln net.Listener, ready chan<- struct{}) error {
	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(max(4<<20, s.opts.MaxAppendSize+(1<<16))),
		// The client pings every 10 s even without streams; a real node
		// accepts that, grpc-go's default policy would hang up.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
	)
	streams.RegisterStreamsServer(gs, &streamsService{s: s})
	serverfeatures.RegisterServerFeaturesServer(gs, &featuresService{s: s})
	gossip.RegisterGossipServer(gs, &gossipService{s: s})

	s.mu.Lock()
	if s.serving != nil {
		s.mu.Unlock()
		if ready != nil {
			close(ready)
		}
		return errors.New("kurrenttest: already serving")
	}
	s.serving = gs
	s.addr = ln.Addr().String()
	s.stopping = false
	s.mu.Unlock()
	if ready != nil {
		close(ready)
	}
	err := gs.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return err
}

// Stop closes the listener and every connection at once, ending every call in
// flight (subscriptions end with codes.Unavailable, as when a node goes down).
// The data stays; Serve may be called again.
func (s *Server) Stop() {
	s.mu.Lock()
	gs := s.serving
	s.serving = nil
	s.stopping = true
	for sub := range s.subs {
		sub.drop()
	}
	s.mu.Unlock()
	if gs != nil {
		gs.Stop()
	}
}

// Restart stops the server and serves again on the same address, keeping the
// data: clients see their connections and subscriptions drop and must
// reconnect.
func (s *Server) Restart() error {
	s.mu.Lock()
	addr := s.addr
	s.mu.Unlock()
	if addr == "" {
		return errors.New("kurrenttest: not serving")
	}
	s.Stop()
	var (
		ln  net.Listener
		err error
	)
	for i := 0; i < 50; i++ { // the port may take a moment to free up
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	s.serveBackground(ln)
	return nil
}

// Addr is the address the server last listened on.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// URL is the connection string for a single node without TLS.
func (s *Server) URL() string {
	return "esdb://" + s.Addr() + "?tls=false"
}

// ExpectedKind is the expected-revision option an append carried.
type ExpectedKind int

const (
	// ExpectMissing means the append options carried no expected revision
	// (a real server refuses that).
	ExpectMissing ExpectedKind = iota
	ExpectAny
	ExpectNoStream
	ExpectStreamExists
	ExpectRevision
)

func (k ExpectedKind) String() string {
	switch k {
	case ExpectAny:
		return "any"
	case ExpectNoStream:
		return "no_stream"
	case ExpectStreamExists:
		return "stream_exists"
	case ExpectRevision:
		return "revision"
	}
	return "missing"
}

// AppendCall is one Append request as the double received it.
type AppendCall struct {
	Stream   string
	Expected ExpectedKind
	Revision uint64 // when Expected is ExpectRevision
	EventIDs []uuid.UUID
	// Outcome is "written", "idempotent", "wrong_expected_version" or the
	// error the call ended with.
	Outcome string
}

// Appends returns every Append call received so far, in order.
func (s *Server) Appends() []AppendCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AppendCall, len(s.calls))
	copy(out, s.calls)
	return out
}

// DropSubscriptions ends every open subscription with codes.Unavailable, as a
// node does when it shuts down or loses leadership, and returns how many it
// dropped. The connection stays up.
func (s *Server) DropSubscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sub := range s.subs {
		if sub.drop() {
			n++
		}
	}
	return n
}

// AnswerNotLeader makes the next n calls that require the leader (those
// carrying the "requires-leader" header) answer as a follower does after the
// leader changed: NotFound with the "not-leader" exception and the leader's
// endpoint, the double's own, in the trailers, having done nothing. Appends
// refused so show the outcome "not_leader" in Appends.
func (s *Server) AnswerNotLeader(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asFollow = n
}

// refuseAsFollower reports whether a call must be refused (see
// AnswerNotLeader) and if so sets the trailers that name the leader.
func (s *Server) refuseAsFollower(ctx context.Context, setTrailer func(metadata.MD)) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("requires-leader"); len(v) == 0 || v[0] != "true" {
		return false
	}
	s.mu.Lock()
	if s.asFollow <= 0 {
		s.mu.Unlock()
		return false
	}
	s.asFollow--
	addr := s.addr
	s.mu.Unlock()
	host, port, _ := net.SplitHostPort(addr)
	setTrailer(metadata.Pairs("exception", "not-leader", "leader-endpoint-host", host, "leader-endpoint-port", port))
	return true
}

// notLeader is the status a follower answers with (RpcExceptions.LeaderInfo
// in KurrentDB); the trailers carry what matters.
func notLeader() error { return status.Error(codes.NotFound, "Leader info available") }

// Subscriptions returns how many subscriptions are open.
func (s *Server) Subscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// AppendSystemEvent writes an event with a $-prefixed type to a $-prefixed
// stream, as the node itself does (statistics, scavenges, users).
func (s *Server) AppendSystemEvent(stream, typ, data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeSystem(stream, typ, data)
}

// writeSystem appends one event to stream; s.mu is held.
func (s *Server) writeSystem(stream, typ, data string) {
	s.write(stream, []proposed{{id: uuid.New(), typ: typ, ctype: "application/json", data: []byte(data)}})
}

// write appends events to stream after its current end and wakes readers;
// s.mu is held.
func (s *Server) write(stream string, evs []proposed) *record {
	recs := s.streams[stream]
	created := s.opts.Now().UnixNano() / 100
	var last *record
	for _, ev := range evs {
		r := &record{
			id: ev.id, stream: stream, number: uint64(len(recs)),
			typ: ev.typ, ctype: ev.ctype, data: ev.data, meta: ev.meta,
			created: created, pos: s.nextPos,
		}
		s.nextPos += uint64(recordOverhead + len(stream) + len(ev.typ) + len(ev.data) + len(ev.meta))
		recs = append(recs, r)
		s.log = append(s.log, r)
		s.ids[r.id] = r
		last = r
	}
	s.streams[stream] = recs
	close(s.changed)
	s.changed = make(chan struct{})
	return last
}

type featuresService struct {
	serverfeatures.UnimplementedServerFeaturesServer
	s *Server
}

func (f *featuresService) GetSupportedMethods(context.Context, *shared.Empty) (*serverfeatures.SupportedMethods, error) {
	const svc = "event_store.client.streams.streams"
	return &serverfeatures.SupportedMethods{
		EventStoreServerVersion: f.s.opts.Version,
		Methods: []*serverfeatures.SupportedMethod{
			{ServiceName: svc, MethodName: "read", Features: []string{"position", "events"}},
			{ServiceName: svc, MethodName: "append"},
		},
	}, nil
}

type gossipService struct {
	gossip.UnimplementedGossipServer
	s *Server
}

// instanceID identifies the double's single node in gossip.
var instanceID = uuid.MustParse("6b61726b-6e74-4000-8000-000000000001")

func (g *gossipService) Read(context.Context, *shared.Empty) (*gossip.ClusterInfo, error) {
	host, portStr, err := net.SplitHostPort(g.s.Addr())
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("kurrenttest: port %q: %w", portStr, err)
	}
	return &gossip.ClusterInfo{Members: []*gossip.MemberInfo{{
		InstanceId:   uuidDTO(instanceID),
		TimeStamp:    g.s.opts.Now().UnixNano() / 100,
		State:        gossip.MemberInfo_Leader,
		IsAlive:      true,
		HttpEndPoint: &gossip.EndPoint{Address: host, Port: uint32(port)},
	}}}, nil
}

package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
)

// Packets builds, stores and reads context packets.
type Packets struct {
	store eventstore.Store
	// redactor takes secrets out of packet text; without one no packet is
	// built, since it could store a secret.
	redactor contextpack.Redactor
	now      func() time.Time
}

// NewPackets is the packet service on store.
func NewPackets(store eventstore.Store, redactor contextpack.Redactor, now func() time.Time) *Packets {
	if now == nil {
		now = time.Now
	}
	return &Packets{store: store, redactor: redactor, now: now}
}

// Create builds a packet from req for call's principal and stores it.
// replayed: the packet is the one an earlier request of call's key stored
// and kept no answer for (Call.Resume), not a new one.
func (s *Packets) Create(ctx context.Context, call Call, req contextpack.Request) (packet *contextpack.Packet, replayed bool, err error) {
	const op = "context.preview"
	if err := req.Validate(); err != nil {
		return nil, false, err
	}
	if s.redactor == nil {
		return nil, false, domain.E(op, domain.KindUnavailable, "secret_scanner_unavailable", "This server has no secret scanner, so it cannot build context packets; nothing was recorded.")
	}
	encoding := req.Encoding
	if encoding == "" {
		encoding = contextpack.DefaultEncoding
	}
	tok, err := contextpack.NewTokenizer(encoding)
	if err != nil {
		return nil, false, err
	}
	req.PacketID = call.Resume
	if req.PacketID == "" {
		req.PacketID = uuid.Must(uuid.NewV7()).String()
	}
	req.CreatedAt = s.now().UTC().Truncate(time.Microsecond)
	packet, err = contextpack.Build(req, tok, s.redactor)
	if err != nil {
		return nil, false, err
	}
	data, err := eventJSON(packet)
	if err != nil {
		return nil, false, err
	}
	if len(data) > maxEventData {
		return nil, false, domain.E(op, domain.KindTooLarge, "packet_too_large",
			"The packet would be %d bytes, more than a stored event may hold (%d); send less text. Nothing was recorded.", len(data), eventstore.MaxEventSize)
	}
	if err := call.beforeWrite(ctx, packet.PacketID); err != nil {
		return nil, false, err
	}
	_, err = appendSettled(ctx, s.store, contextpack.StreamID(packet.PacketID), eventstore.NoStream(), eventstore.NewEvent(contextpack.EventCreated, data,
		eventstore.Metadata{Tenant: call.Principal.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID, CausationID: call.RequestID, RecordedAt: packet.CreatedAt}))
	if errors.Is(err, eventstore.ErrConflict) && call.Resume != "" {
		// Stored by the request of the key that kept no answer: that
		// packet is the answer.
		made, owner, err := s.read(ctx, packet.PacketID)
		if err == nil && owner != call.Principal.Tenant {
			err = fmt.Errorf("context packet %s: stored for tenant %q, resumed for %q", packet.PacketID, owner, call.Principal.Tenant)
		}
		return made, err == nil, err
	}
	if err != nil {
		return nil, false, err
	}
	return packet, false, nil
}

// Get reads a packet p may see; any other id is not found.
func (s *Packets) Get(ctx context.Context, p domain.Principal, id string) (*contextpack.Packet, error) {
	packet, owner, err := s.read(ctx, id)
	if err != nil {
		return nil, err
	}
	if !p.CanSee(owner) {
		return nil, packetNotFound(id)
	}
	return packet, nil
}

// Load reads a packet of tenant, for a prompt: only the tenant's own
// packets, admin or not. Render it with (*contextpack.Packet).PromptText.
func (s *Packets) Load(ctx context.Context, tenant, id string) (*contextpack.Packet, error) {
	return s.Get(ctx, domain.Principal{Tenant: tenant}, id)
}

func (s *Packets) read(ctx context.Context, id string) (*contextpack.Packet, string, error) {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return nil, "", packetNotFound(id) // only the canonical form names a stream
	}
	evs, err := s.store.ReadStream(ctx, contextpack.StreamID(id), 0, 1)
	if err != nil {
		return nil, "", err
	}
	if len(evs) == 0 || evs[0].Type != contextpack.EventCreated {
		return nil, "", packetNotFound(id)
	}
	if evs[0].Unreadable != "" {
		return nil, "", fmt.Errorf("context packet %s: %s", id, evs[0].Unreadable) // no tenant to check it against
	}
	var packet contextpack.Packet
	if err := json.Unmarshal(evs[0].Data, &packet); err != nil {
		return nil, "", fmt.Errorf("context packet %s: %w", id, err)
	}
	return &packet, evs[0].Metadata.Tenant, nil
}

func packetNotFound(id string) error {
	return domain.E("context.get", domain.KindNotFound, "context_packet_not_found", "no context packet %s", id)
}

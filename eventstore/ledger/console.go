package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Console issues the console's one-time sign-in links and keeps its
// sessions, as events in the store: every replica sharing the store honours
// a link or a session another one issued, a link's one use is enforced by
// an expected-revision append, and only hashes of secrets are stored.
type Console struct {
	store eventstore.Store
	now   func() time.Time
}

// NewConsole is the console service on store; now is its clock (time.Now
// when nil).
func NewConsole(store eventstore.Store, now func() time.Time) *Console {
	if now == nil {
		now = time.Now
	}
	return &Console{store: store, now: now}
}

// ConsoleLink is an issued link: its token (shown once) and what it grants.
type ConsoleLink struct {
	LinkID    string    `json:"linkId"`
	Token     string    `json:"-"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ConsoleSession is a signed-in person.
type ConsoleSession struct {
	SessionID string
	Token     string // the cookie's value; set only by Redeem
	LinkID    string
	Tenant    string
	Name      string
	Role      string
	ExpiresAt time.Time
}

// Principal is who the session acts as.
func (s ConsoleSession) Principal() domain.Principal {
	return domain.Principal{Tenant: s.Tenant, Person: s.Name, Role: s.Role}
}

func consoleEvent(typ string, v any, meta eventstore.Metadata) (eventstore.EventData, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return eventstore.EventData{}, err
	}
	return eventstore.NewEvent(typ, data, meta), nil
}

// IssueLink records a one-time link signing name in to tenant's console as
// role, valid for ttl, issued by actor.
func (c *Console) IssueLink(ctx context.Context, actor, requestID, tenant, name, role string, ttl time.Duration) (ConsoleLink, error) {
	if err := domain.ValidateConsoleLink(tenant, name, role, ttl); err != nil {
		return ConsoleLink{}, err
	}
	id, secret, err := domain.NewConsoleToken()
	if err != nil {
		return ConsoleLink{}, err
	}
	exp := c.now().Add(ttl).UTC().Truncate(time.Second)
	ev := domain.ConsoleLinkIssued{LinkID: id, Tenant: tenant, Name: name, Role: role, SecretHash: domain.HashConsoleSecret(secret), ExpiresAt: exp}
	e, err := consoleEvent(domain.EventConsoleLinkIssued, ev, eventstore.Metadata{Tenant: tenant, Actor: actor, RequestID: requestID})
	if err != nil {
		return ConsoleLink{}, err
	}
	if _, err := c.store.Append(ctx, domain.ConsoleLinkStream(id), eventstore.NoStream(), e); err != nil {
		return ConsoleLink{}, err
	}
	return ConsoleLink{LinkID: id, Token: id + "." + secret, Tenant: tenant, Name: name, Role: role, ExpiresAt: exp}, nil
}

// A refused link's words are the sign-in page's: what happened and what
// to do ("this sign-in link is not valid" left a person whose mail client
// had cut the link with nothing to try).
const (
	linkNotValid = "This sign-in link is not valid: it may have been cut or changed on its way to you (split over two lines, or with a character added at its end). " +
		"Open it again, whole, from the message it came in; if it is refused again, ask an admin for a new one."
	linkUsed = "This sign-in link was already used or revoked, so it cannot sign you in: a link works once. " +
		"If you signed in with it in another browser, use that one; else ask an admin for a new one."
)

func linkRefused(format string, args ...any) error {
	return domain.E("console.signin", domain.KindUnauthorized, "link_refused", format, args...)
}

// Redeem exchanges a link's token for a new session. A link works once:
// its use is appended at the link's first revision, so of two redemptions
// racing (on one replica or several) one commits and the other is refused.
// An unknown, used, revoked or expired link is refused alike.
func (c *Console) Redeem(ctx context.Context, requestID, token string) (ConsoleSession, error) {
	id, secret, ok := domain.SplitConsoleToken(token)
	if !ok {
		return ConsoleSession{}, linkRefused(linkNotValid)
	}
	evs, err := eventstore.ReadWholeStream(ctx, c.store, domain.ConsoleLinkStream(id))
	if err != nil {
		return ConsoleSession{}, err
	}
	if len(evs) == 0 || evs[0].Type != domain.EventConsoleLinkIssued {
		return ConsoleSession{}, linkRefused(linkNotValid)
	}
	var link domain.ConsoleLinkIssued
	if err := json.Unmarshal(evs[0].Data, &link); err != nil {
		return ConsoleSession{}, err
	}
	if !domain.ConsoleSecretMatches(secret, link.SecretHash) {
		return ConsoleSession{}, linkRefused(linkNotValid)
	}
	if len(evs) > 1 {
		return ConsoleSession{}, linkRefused(linkUsed)
	}
	now := c.now()
	if !now.Before(link.ExpiresAt) {
		return ConsoleSession{}, linkRefused("This sign-in link expired at %s, so it cannot sign you in; ask an admin for a new one.", link.ExpiresAt.Format(time.RFC3339))
	}
	sid, ssecret, err := domain.NewConsoleToken()
	if err != nil {
		return ConsoleSession{}, err
	}
	meta := eventstore.Metadata{Tenant: link.Tenant, Actor: "person:" + link.Name, RequestID: requestID}
	// The session is recorded before the link's use: a revocation that
	// finds the link used then finds the session too, and ends it. (Used
	// first, a revocation in between ended a session not yet recorded,
	// and the session then started, live.) Until the use commits, nobody
	// holds the session's secret.
	exp := now.Add(domain.ConsoleSessionTTL).UTC().Truncate(time.Second)
	started := domain.ConsoleSessionStarted{SessionID: sid, LinkID: id, Tenant: link.Tenant, Name: link.Name, Role: link.Role,
		SecretHash: domain.HashConsoleSecret(ssecret), ExpiresAt: exp}
	e, err := consoleEvent(domain.EventConsoleSessionStarted, started, meta)
	if err != nil {
		return ConsoleSession{}, err
	}
	if _, err := c.store.Append(ctx, domain.ConsoleSessionStream(sid), eventstore.NoStream(), e); err != nil {
		return ConsoleSession{}, err
	}
	used, err := consoleEvent(domain.EventConsoleLinkUsed, domain.ConsoleLinkUsed{LinkID: id, SessionID: sid}, meta)
	if err != nil {
		return ConsoleSession{}, err
	}
	if _, err := c.store.Append(ctx, domain.ConsoleLinkStream(id), eventstore.Revision(evs[0].Revision), used); err != nil {
		// Not this redemption's link to use: the session it recorded ends
		// unused.
		c.EndSession(ctx, Call{Principal: domain.Principal{Tenant: link.Tenant, Person: link.Name}, RequestID: requestID}, sid, "link already used or revoked")
		if errors.Is(err, eventstore.ErrConflict) {
			return ConsoleSession{}, linkRefused(linkUsed)
		}
		return ConsoleSession{}, err
	}
	return ConsoleSession{SessionID: sid, Token: sid + "." + ssecret, LinkID: id, Tenant: link.Tenant, Name: link.Name, Role: link.Role, ExpiresAt: exp}, nil
}

// ErrNoSession is a cookie that names no live session: unknown, expired or
// ended.
var ErrNoSession = errors.New("console: no such session")

// SessionEnded is the ErrNoSession of a session that was live: why it
// ended (its ConsoleSessionEnded reason: "revoked", "signed out", ...; or
// "expired") and when, so that its person is told which. Only the holder
// of its secret learns it.
type SessionEnded struct {
	Reason string
	At     time.Time
}

// SessionExpired is the Reason of a session that outlived its time.
const SessionExpired = "expired"

func (e *SessionEnded) Error() string        { return "console: the session ended: " + e.Reason }
func (e *SessionEnded) Is(target error) bool { return target == ErrNoSession }

// Session resolves a session cookie's token.
func (c *Console) Session(ctx context.Context, token string) (ConsoleSession, error) {
	id, secret, ok := domain.SplitConsoleToken(token)
	if !ok {
		return ConsoleSession{}, ErrNoSession
	}
	evs, err := eventstore.ReadWholeStream(ctx, c.store, domain.ConsoleSessionStream(id))
	if err != nil {
		return ConsoleSession{}, err
	}
	if len(evs) == 0 || evs[0].Type != domain.EventConsoleSessionStarted {
		return ConsoleSession{}, ErrNoSession
	}
	var st domain.ConsoleSessionStarted
	if err := json.Unmarshal(evs[0].Data, &st); err != nil {
		return ConsoleSession{}, err
	}
	if !domain.ConsoleSecretMatches(secret, st.SecretHash) {
		return ConsoleSession{}, ErrNoSession
	}
	if len(evs) > 1 {
		var end domain.ConsoleSessionEnded
		json.Unmarshal(evs[1].Data, &end)
		return ConsoleSession{}, &SessionEnded{Reason: end.Reason, At: evs[1].Metadata.RecordedAt}
	}
	if !c.now().Before(st.ExpiresAt) {
		return ConsoleSession{}, &SessionEnded{Reason: SessionExpired, At: st.ExpiresAt}
	}
	return ConsoleSession{SessionID: st.SessionID, LinkID: st.LinkID, Tenant: st.Tenant, Name: st.Name, Role: st.Role, ExpiresAt: st.ExpiresAt}, nil
}

// EndSession ends session id (sign-out, or a revocation). Ending an ended
// session records nothing.
func (c *Console) EndSession(ctx context.Context, call Call, id, reason string) error {
	evs, err := eventstore.ReadWholeStream(ctx, c.store, domain.ConsoleSessionStream(id))
	if err != nil || len(evs) != 1 {
		return err
	}
	var st domain.ConsoleSessionStarted
	if err := json.Unmarshal(evs[0].Data, &st); err != nil {
		return err
	}
	e, err := consoleEvent(domain.EventConsoleSessionEnded, domain.ConsoleSessionEnded{SessionID: id, Reason: reason},
		eventstore.Metadata{Tenant: st.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID})
	if err != nil {
		return err
	}
	_, err = c.store.Append(ctx, domain.ConsoleSessionStream(id), eventstore.Revision(evs[0].Revision), e)
	if errors.Is(err, eventstore.ErrConflict) {
		return nil // ended meanwhile
	}
	return err
}

// RevokeLink ends link id: unused, it can no longer be redeemed; used, the
// session it started ends.
func (c *Console) RevokeLink(ctx context.Context, call Call, id string) error {
	const op = "console.revoke"
	for attempt := 0; ; attempt++ {
		evs, err := eventstore.ReadWholeStream(ctx, c.store, domain.ConsoleLinkStream(id))
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return domain.E(op, domain.KindNotFound, "link_not_found", "no console link has the id %q", id)
		}
		var link domain.ConsoleLinkIssued
		json.Unmarshal(evs[0].Data, &link)
		var session string
		for _, ev := range evs[1:] {
			switch ev.Type {
			case domain.EventConsoleLinkRevoked:
				return nil
			case domain.EventConsoleLinkUsed:
				var u domain.ConsoleLinkUsed
				json.Unmarshal(ev.Data, &u)
				session = u.SessionID
			}
		}
		e, err := consoleEvent(domain.EventConsoleLinkRevoked, domain.ConsoleLinkRevoked{LinkID: id},
			eventstore.Metadata{Tenant: link.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID})
		if err != nil {
			return err
		}
		_, err = c.store.Append(ctx, domain.ConsoleLinkStream(id), eventstore.Revision(evs[len(evs)-1].Revision), e)
		if errors.Is(err, eventstore.ErrConflict) && attempt < maxConflictRetries {
			continue // used meanwhile: end its session too
		}
		if err != nil {
			return err
		}
		if session != "" {
			return c.EndSession(ctx, call, session, "revoked")
		}
		return nil
	}
}

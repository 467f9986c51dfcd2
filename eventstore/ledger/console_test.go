package ledger_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// A link signs one person in once: of many redemptions racing, exactly one
// gets a session; the stream holds only hashes of the secrets.
func TestConsoleLinkIsUsedOnce(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	c := ledger.NewConsole(st, nil)
	link, err := c.IssueLink(ctx, admin.Principal.Actor(), "", "a", "alice@example.com", domain.RoleApprover, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sessions []ledger.ConsoleSession
	refused := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.Redeem(ctx, "", link.Token)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if domain.KindOf(err) != domain.KindUnauthorized {
					t.Errorf("refusal %v is not 401", err)
				}
				refused++
				return
			}
			sessions = append(sessions, s)
		}()
	}
	wg.Wait()
	if len(sessions) != 1 || refused != 7 {
		t.Fatalf("%d sessions, %d refused; want 1 and 7", len(sessions), refused)
	}
	s := sessions[0]
	got, err := c.Session(ctx, s.Token)
	if err != nil || got.Name != "alice@example.com" || got.Role != domain.RoleApprover || got.Tenant != "a" {
		t.Fatalf("session %+v, %v", got, err)
	}
	if got.Principal().Actor() != "person:alice@example.com" {
		t.Fatalf("actor %q", got.Principal().Actor())
	}
	// Only hashes are stored.
	for _, stream := range []string{domain.ConsoleLinkStream(link.LinkID), domain.ConsoleSessionStream(s.SessionID)} {
		evs, _ := eventstore.ReadWholeStream(ctx, st, stream)
		for _, ev := range evs {
			for _, tok := range []string{link.Token, s.Token} {
				_, secret, _ := strings.Cut(tok, ".")
				if strings.Contains(string(ev.Data), secret) {
					t.Fatalf("%s holds a secret: %s", ev.Type, ev.Data)
				}
			}
		}
	}
	// A wrong secret with the right id is no session.
	if _, err := c.Session(ctx, s.SessionID+"."+strings.Repeat("A", 43)); !errors.Is(err, ledger.ErrNoSession) {
		t.Fatalf("forged cookie: %v", err)
	}
	// Revoking the link ends its session.
	if err := c.RevokeLink(ctx, admin, link.LinkID); err != nil {
		t.Fatal(err)
	}
	var ended *ledger.SessionEnded
	if _, err := c.Session(ctx, s.Token); !errors.Is(err, ledger.ErrNoSession) || !errors.As(err, &ended) || ended.Reason != "revoked" || ended.At.IsZero() {
		t.Fatalf("session after revocation: %v", err)
	}
	// Who holds no secret of it is not told why it ended.
	if _, err := c.Session(ctx, s.SessionID+"."+strings.Repeat("A", 43)); !errors.Is(err, ledger.ErrNoSession) || errors.As(err, &ended) {
		t.Fatalf("forged cookie of an ended session: %v", err)
	}
}

func TestConsoleLinkAndSessionExpire(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := ledger.NewConsole(st, func() time.Time { return now })
	link, err := c.IssueLink(ctx, admin.Principal.Actor(), "", "a", "ann", domain.RoleAuditor, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := c.Redeem(ctx, "", link.Token); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired link: %v", err)
	}
	link, _ = c.IssueLink(ctx, admin.Principal.Actor(), "", "a", "ann", domain.RoleAuditor, time.Minute)
	s, err := c.Redeem(ctx, "", link.Token)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(domain.ConsoleSessionTTL)
	var ended *ledger.SessionEnded
	if _, err := c.Session(ctx, s.Token); !errors.Is(err, ledger.ErrNoSession) || !errors.As(err, &ended) || ended.Reason != ledger.SessionExpired {
		t.Fatalf("expired session: %v", err)
	}
	for _, bad := range []struct{ tenant, name, role string }{{"A!", "x", "approver"}, {"a", "", "approver"}, {"a", "x", "admin"}} {
		if _, err := c.IssueLink(ctx, admin.Principal.Actor(), "", bad.tenant, bad.name, bad.role, time.Minute); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// beforeAppend runs hook once, before the first append whose stream has
// the prefix (its own appends go through).
type beforeAppend struct {
	eventstore.Store
	prefix string
	ran    bool
	hook   func()
}

func (s *beforeAppend) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if s.hook != nil && !s.ran && strings.HasPrefix(stream, s.prefix) {
		s.ran = true
		s.hook()
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// A link revoked while it is being redeemed starts no session that
// outlives the revocation: whichever comes first, the person is refused or
// the session ends (the revocation found the link used, ended a session
// not yet recorded, and the session then started, live).
func TestConsoleLinkRevokedDuringItsUse(t *testing.T) {
	ctx := context.Background()
	for _, between := range []string{"console-session-", "console-link-"} {
		st := &beforeAppend{Store: openStore(t)}
		c := ledger.NewConsole(st, nil)
		link, err := c.IssueLink(ctx, admin.Principal.Actor(), "", "a", "alice@example.com", domain.RoleApprover, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		st.prefix = between
		st.hook = func() {
			if err := c.RevokeLink(ctx, admin, link.LinkID); err != nil {
				t.Errorf("revoking: %v", err)
			}
		}
		s, err := c.Redeem(ctx, "", link.Token)
		if err == nil {
			_, err = c.Session(ctx, s.Token)
			if !errors.Is(err, ledger.ErrNoSession) {
				t.Errorf("revoked before the %s… append: the session is live (%v)", between, err)
			}
		} else if domain.KindOf(err) != domain.KindUnauthorized {
			t.Errorf("revoked before the %s… append: refused with %v", between, err)
		}
	}
}

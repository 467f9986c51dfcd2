package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
	batonhttp "github.com/batonhq/baton/http"
)

// consoleLink prints a one-time console sign-in link: baton console link.
// Like keys create, it writes to the store directly (the embedded store
// with the server stopped; while serving, POST /v1/admin/console-links).
func consoleLink(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("console link", flag.ContinueOnError)
	data := fs.String("data", dataDirDefault(), "data directory")
	var env envVars
	storeOpts := addStoreFlags(fs, &env)
	tenant := fs.String("tenant", "", "the tenant whose console the person signs in to (required)")
	name := fs.String("name", "", "the person: a name or e-mail address, recorded as actor person:<name> (required)")
	role := fs.String("role", "", "approver (approves or rejects), verifier (reviews proof) or auditor (reads) (required)")
	ttl := fs.Duration("ttl", domain.DefaultConsoleLinkTTL, "how long the link works (at most 168h)")
	base := fs.String("url", envOr("BATON_CONSOLE_URL", "http://"+loopbackFor(envOr("BATON_ADDR", defaultAddr))), "the console's base URL, as the person's browser reaches baton serve (or BATON_CONSOLE_URL; else http:// and BATON_ADDR)")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if *tenant == "" || *name == "" || *role == "" {
		return usageError{errors.New("--tenant, --name and --role are required")}
	}
	if err := checkBaseURL("--url (BATON_CONSOLE_URL)", *base); err != nil {
		return err
	}
	// Told by its flag, before the store is opened: the service tells it
	// by the API's field (/ttlSeconds).
	var de *domain.Error
	if err := domain.ValidateConsoleLink(*tenant, *name, *role, *ttl); errors.As(err, &de) && len(de.Fields) > 0 {
		var bad []string
		for _, f := range de.Fields {
			given := map[string]string{"/tenant": fmt.Sprintf("--tenant %q", *tenant), "/name": fmt.Sprintf("--name %q", *name),
				"/role": fmt.Sprintf("--role %q", *role), "/ttlSeconds": fmt.Sprintf("--ttl %v", *ttl)}[f.Pointer]
			if given == "" {
				given = f.Pointer
			}
			bad = append(bad, given+": "+f.Message)
		}
		return errors.New(strings.Join(bad, "; "))
	}
	if err := storeOpts.dataNotRead(); err != nil {
		return err
	}
	if err := storeOpts.notMigratedFrom(*data); err != nil {
		return err
	}
	// A link needs a tenant with a key, so a store a server made: a
	// mistyped --data must not leave a new empty one behind.
	store, err := storeOpts.openExisting(ctx, *data, zerolog.Nop())
	if errors.Is(err, eventstore.ErrLocked) {
		return fmt.Errorf("%w; while it serves, ask it: make console-link, or POST /v1/admin/console-links with an admin key", err)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	if known, err := ledger.NewKeys(store).TenantKnown(ctx, *tenant); err != nil {
		return err
	} else if !known {
		return fmt.Errorf("--tenant %q names no tenant of this Baton: no key was ever made for it; check its spelling, or make its first key (baton keys create --tenant %s)", *tenant, *tenant)
	}
	link, err := ledger.NewConsole(store, nil).IssueLink(ctx, "cli:console-link", "", *tenant, *name, *role, *ttl)
	if err != nil {
		return err
	}
	// As the server takes its --console-url: a trailing slash made
	// //console/signin, which the console answers 404.
	fmt.Fprintln(stdout, batonhttp.ConsoleLinkURL(strings.TrimRight(*base, "/"), link.Token))
	fmt.Fprintf(os.Stderr, "one-time link %s signs %s in to tenant %q's console as %s until %s.\n", link.LinkID, link.Name, link.Tenant, link.Role, link.ExpiresAt.Format(time.RFC3339))
	return nil
}

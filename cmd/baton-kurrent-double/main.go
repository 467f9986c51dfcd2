// Command baton-kurrent-double serves the KurrentDB TEST DOUBLE
// (eventstore/kurrent/kurrenttest) as a process of its own, so that several
// baton processes can share it in tests and trials. It is kept out of the
// baton binary: it is not a database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

const usage = `usage: baton-kurrent-double [--addr 127.0.0.1:2113] [--empty] [--system-event-every N] [--max-append-size BYTES]

Development only. baton-kurrent-double serves the KurrentDB TEST DOUBLE
(eventstore/kurrent/kurrenttest) as a process of its own, so that several
baton processes can share it in tests and trials. It is NOT a database:
everything lives in memory and is gone when it stops; no TLS, no
authentication, one node. Use a real KurrentDB for anything you want to keep.`

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "baton-kurrent-double:", err)
		os.Exit(1)
	}
}

// run serves the test double until SIGINT or SIGTERM (or ctx ends). It
// prints the address it listens on and the connection string to use, so
// that callers may ask for port 0.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("baton-kurrent-double", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	addr := fs.String("addr", "127.0.0.1:2113", "listen address (port 0 picks a free one)")
	empty := fs.Bool("empty", false, "start with an empty log, without the system events a fresh node has")
	sysEvery := fs.Int("system-event-every", 0, "write a system event after every N appends, as a busy node's $all has them")
	maxAppend := fs.Int("max-append-size", kurrenttest.DefaultMaxAppendSize, "refuse appends larger than this, as the server's --max-append-size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (it takes flags only)", fs.Arg(0))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := kurrenttest.New(kurrenttest.Options{Empty: *empty, SystemEventEvery: *sysEvery, MaxAppendSize: *maxAppend})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	a := ln.Addr().String()
	fmt.Fprintf(stdout, "kurrent-double: a TEST DOUBLE of a KurrentDB node, NOT a database (in memory, gone when it stops), serving on %s\n", a)
	fmt.Fprintf(stdout, "BATON_KURRENTDB_URL=esdb://%s?tls=false\n", a)
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	srv.Stop()
	return <-served
}

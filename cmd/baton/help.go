package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagError is a command's flags failing to parse, or -h / --help: run
// prints the command's usage, on stdout for help (exit 0), on stderr
// before the error otherwise.
type flagError struct {
	fs  *flag.FlagSet
	err error
}

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// ExitCode is 2, a usage error's status (as Go's flag package and POSIX
// tools exit): a script tells a command it called wrongly from one that
// ran and failed (1).
func (e *flagError) ExitCode() int { return 2 }

// usageError is a command line naming no command, or one or a subcommand
// that does not exist: exit 2, as a bad flag.
type usageError struct{ error }

func (usageError) ExitCode() int { return 2 }

// parseFlags parses a command's flags. The flag package prints nothing:
// run prints the usage and main the error, once each.
// The flag package stops at the first argument that is not a flag, so a
// flag after a stray word would be dropped without a word (and a --data
// after it lost for ./data): a command that takes no arguments refuses
// any, and one that does refuses a flag after them.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	// Every --data takes its default from BATON_DATA_DIR (dataDirDefault).
	if f := fs.Lookup("data"); f != nil && !strings.Contains(f.Usage, "BATON_DATA_DIR") {
		f.Usage += " (or BATON_DATA_DIR)"
	}
	if err := fs.Parse(args); err != nil {
		return &flagError{fs: fs, err: err}
	}
	if fs.NArg() > 0 && !takesArguments[fs.Name()] {
		return &flagError{fs: fs, err: fmt.Errorf("unexpected argument %q: baton %s takes flags only", fs.Arg(0), fs.Name())}
	}
	for _, a := range fs.Args() {
		if len(a) > 1 && a[0] == '-' {
			return &flagError{fs: fs, err: fmt.Errorf("flag %s comes after the arguments, where it is not read as a flag: put the flags first", a)}
		}
	}
	// A script's unset variable (--data "$DIR"): told by name, where the
	// store said "mkdir : no such file or directory".
	if f := fs.Lookup("data"); f != nil && f.Value.String() == "" {
		return &flagError{fs: fs, err: errors.New("--data is empty; give the data directory (default ./data, or BATON_DATA_DIR)")}
	}
	return nil
}

// takesArguments names the commands that take arguments after their
// flags.
var takesArguments = map[string]bool{"ledger export": true, "ledger verify": true}

// printCommandUsage writes the command's lines of the usage text and its
// flags.
func printCommandUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage:\n%s", commandUsage(fs.Name()))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// commandUsage is the usage text's entry for the command name ("serve",
// "keys create"): its line and the indented lines that continue it.
func commandUsage(name string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		switch {
		case line == "  baton "+name || strings.HasPrefix(line, "  baton "+name+" "):
			in = true
		case in && strings.HasPrefix(line, "        "): // continues the entry
		default:
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// missingSubcommand answers a command group (keys, ledger, log, store)
// called without one of its subcommands subs: with -h or --help, the usage
// of every one of them on stdout; else the error msg.
func missingSubcommand(args []string, subs []string, msg string, stdout io.Writer) error {
	if len(args) == 2 && isHelp(args[1]) {
		var helps []string
		for _, sub := range subs {
			helps = append(helps, fmt.Sprintf("`baton %s %s --help`", args[0], sub))
		}
		lists := "lists its flags"
		if len(helps) > 1 {
			lists = "list their flags"
		}
		fmt.Fprintf(stdout, "Usage:\n%s\n%s %s.\n", commandUsage(args[0]), strings.Join(helps, " and "), lists)
		return nil
	}
	if len(args) >= 2 {
		// Named: "baton keys list" answered with the usage of keys create
		// alone, as if list had been read as something else.
		return usageError{fmt.Errorf("baton %s has no subcommand %q (it has %s); %s", args[0], args[1], strings.Join(subs, ", "), msg)}
	}
	return usageError{errors.New(msg)}
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

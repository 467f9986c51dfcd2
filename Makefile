# Baton. `make run` serves on the embedded store; `make test` runs every test.
SHELL     := bash
GO        ?= go
# make run ADDR=127.0.0.1:9090 (or BATON_ADDR / BATON_DATA_DIR in the environment)
DATA      ?= $(or $(BATON_DATA_DIR),./data)
ADDR      ?= $(or $(BATON_ADDR),127.0.0.1:8080)
# make run PROVIDERS=my-providers.json (or BATON_PROVIDERS_FILE; default ./providers.json when present)
PROVIDERS ?= $(BATON_PROVIDERS_FILE)
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 30s
# The race detector needs cgo and so a C compiler; .ci/run installs one. On a
# machine with only Go, make test still runs every test, without -race.
RACE      ?= $(shell command -v gcc >/dev/null 2>&1 && echo -race)

.PHONY: run build test vet fmt-check lint bench fuzz clean console-link

# DATA, ADDR and PROVIDERS become flags only when given to make: the
# variables (BATON_DATA_DIR, BATON_ADDR, BATON_PROVIDERS_FILE) reach baton
# as they are, with the same defaults, and a value it refuses is named by
# the variable that was set.
given = $(filter-out file default undefined,$(origin $(1)))

# The server is built, then exec'd as make's own child: make passes a
# SIGTERM (a supervisor's, timeout's, kill's) on to it, and it stops
# gracefully. Under go run it went to go run alone, which died and left the
# server running, holding the port and the data directory.
# DATA, ADDR and PROVIDERS reach the server through its environment, never
# the recipe's text: a data directory with a space in its path ("Application
# Support") was split into two arguments, and serve refused the second.
run: export RUN_DATA = $(DATA)
run: export RUN_ADDR = $(ADDR)
run: export RUN_PROVIDERS = $(PROVIDERS)
run:
	$(GO) build -ldflags "$(LDFLAGS)" -o baton ./cmd/baton && exec ./baton serve$(if $(call given,DATA), --data "$$RUN_DATA")$(if $(call given,ADDR), --addr "$$RUN_ADDR")$(if $(and $(call given,PROVIDERS),$(PROVIDERS)), --providers "$$RUN_PROVIDERS")

# A one-time console sign-in link from the running server (make run in
# another shell), with the admin key in BATON_API_KEY:
#   make console-link NAME=alice@example.com ROLE=approver [TENANT=default]
NAME   ?= you@example.com
ROLE   ?= approver
TENANT ?= default
# The values reach the recipe through its environment, never its text, and
# are escaped as JSON strings: a name such as o'brien@example.com broke the
# shell's quoting, and a quote in it the JSON.
console-link: export CONSOLE_LINK_TENANT = $(TENANT)
console-link: export CONSOLE_LINK_NAME = $(NAME)
console-link: export CONSOLE_LINK_ROLE = $(ROLE)
console-link: export CONSOLE_LINK_ADDR = $(ADDR)
# A listen address of every interface (":8080", as BATON_ADDR may be for
# make run, "0.0.0.0:8080", "[::]:8080") is no URL's host: curl refused
# http://:8080/. It is asked on the loopback, which it serves too. A URL
# (ADDR=http://host:8080, pasted from a browser) is taken as it is.
console-link:
	@[ -n "$$BATON_API_KEY" ] || { echo "set BATON_API_KEY to an admin key (make run prints one on its first start)"; exit 1; }
	@str() { printf '"%s"' "$$(printf '%s' "$$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }; \
	addr=$$CONSOLE_LINK_ADDR; case "$$addr" in \
	  :*) addr=127.0.0.1$$addr ;; \
	  0.0.0.0:*) addr=127.0.0.1:$${addr#0.0.0.0:} ;; \
	  '[::]:'*) addr=127.0.0.1:$${addr#'[::]:'} ;; \
	esac; \
	case "$$addr" in http://*|https://*) base=$${addr%/} ;; *) base=http://$$addr ;; esac; \
	out=$$(curl -sS -X POST "$$base/v1/admin/console-links" -H "Authorization: Bearer $$BATON_API_KEY" \
	  -d "{\"tenant\":$$(str "$$CONSOLE_LINK_TENANT"),\"name\":$$(str "$$CONSOLE_LINK_NAME"),\"role\":$$(str "$$CONSOLE_LINK_ROLE")}") || \
	  { echo "no answer from $$base: is make run going (in another shell)? On another address, give make console-link the ADDR= make run was given" >&2; exit 1; }; \
	url=$$(printf '%s' "$$out" | sed -n 's/.*"url":"\([^"]*\)".*/\1/p'); \
	if [ -n "$$url" ]; then echo "$$url"; else echo "$$out" >&2; exit 1; fi

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o baton ./cmd/baton
	$(GO) build -o baton-executor ./cmd/baton-executor

# Every test, race detector on. Fuzz targets run their seed corpora here;
# `make fuzz` explores further.
# Prints each top-level test's result (subtests and logs stay in
# test.log unless something fails) and a closing tally.
test: vet fmt-check
	@[ -n "$(RACE)" ] || echo "note: no C compiler found, running without -race (install gcc, or run .ci/run)"
	@set -o pipefail; $(GO) test $(RACE) -count=1 -timeout 15m -v ./... > test.log 2>&1; rc=$$?; \
	grep -E '^(--- (PASS|FAIL|SKIP)|    --- (PASS|FAIL|SKIP): TestConformance\/[^/ ]+ |ok |FAIL|panic:|.*summary: )' test.log; \
	if [ $$rc -ne 0 ]; then echo "--- full log of the failing run:"; grep -vE '^(=== (RUN|PAUSE|CONT)|    --- PASS)' test.log | tail -200; fi; \
	echo "$$(grep -cE '^\s*--- PASS' test.log) passed, $$(grep -cE '^\s*--- FAIL' test.log) failed, $$(grep -cE '^\s*--- SKIP' test.log) skipped"; \
	exit $$rc

# Every package and its tests also type-check for macOS and Windows: a
# Linux-only call (syscall.Fdatasync) once broke the commands there unseen.
vet:
	$(GO) vet ./...
	CGO_ENABLED=0 GOOS=darwin $(GO) vet ./...
	CGO_ENABLED=0 GOOS=windows $(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt -l lists:"; echo "$$out"; exit 1; fi

lint: vet fmt-check

# Measures and rewrites docs/benchmarks.md (machine and date included).
bench:
	$(GO) run ./cmd/baton-bench --out docs/benchmarks.md

# Every native fuzz target in the tree, found by name, FUZZTIME each. A run
# that fails having written no failing input and printing only "context
# deadline exceeded" hit a race in Go's fuzzing coordinator at the end of
# -fuzztime (golang/go#51484), not a finding: that target is run once more.
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	  d=$$(dirname $$f); \
	  for n in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    for try in 1 2; do \
	      echo "== $$d $$n"; \
	      if out=$$($(GO) test -run '^$$' -fuzz "^$$n\$$" -fuzztime $(FUZZTIME) $$d 2>&1); then echo "$$out" | tail -1; break; fi; \
	      echo "$$out" | tail -30; \
	      if [ $$try = 1 ] && ! echo "$$out" | grep -q 'Failing input written' && echo "$$out" | grep -q 'context deadline exceeded'; then \
	        echo "(no failing input written: the fuzzing coordinator's end-of-run race, golang/go#51484; running it again)"; continue; fi; \
	      exit 1; \
	    done; \
	  done; \
	done

# Build outputs only: the data directory is the ledger (DATA may be an
# operator's BATON_DATA_DIR), never removed by a clean. To start a
# development server over, remove ./data by hand.
clean:
	rm -f baton baton-executor baton-bench test.log

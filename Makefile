# Baton. `make run` serves on the embedded store; `make test` runs every test.
GO        ?= go
DATA      ?= ./data
ADDR      ?= 127.0.0.1:8080
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 30s

.PHONY: run build test vet fmt-check lint bench fuzz clean

run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/baton serve --data $(DATA) --addr $(ADDR)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o baton ./cmd/baton

# Every test, race detector on. Fuzz targets run their seed corpora here;
# `make fuzz` explores further.
test: vet fmt-check
	$(GO) test -race -count=1 -timeout 15m ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt -l lists:"; echo "$$out"; exit 1; fi

lint: vet fmt-check

# Measures and rewrites docs/benchmarks.md (machine and date included).
bench:
	$(GO) run ./cmd/baton bench --out docs/benchmarks.md

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeRecord -fuzztime $(FUZZTIME) ./eventstore/bolt
	$(GO) test -run '^$$' -fuzz FuzzDecodeHead -fuzztime $(FUZZTIME) ./eventstore/bolt

clean:
	rm -rf baton $(DATA)

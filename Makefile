# ralph: build, test, lint, bench. `make test` is what CI runs.
GO ?= go
BIN ?= bin/ralph

# What `ralph version` says about a `make build`: git describe's version,
# the commit and its date (the commit's, so that two builds of one commit
# are the same bytes). Releases set the same three in .goreleaser.yaml.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build test test-short test-oracle lint bench fuzz docs snapshot clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/ralph

# The whole suite: unit tests, fuzz seeds, testscript end to end. A race
# build sleeps a second at exit by default (GORACE atexit_sleep_ms) so that
# late reports come out; the testscripts start ralph and the fake agents
# as race builds thousands of times, so the suite would spend most of its
# time asleep.
test:
	$(GO) vet ./...
	GORACE="atexit_sleep_ms=0 $(GORACE)" $(GO) test -race -count=1 -timeout 20m ./...

# ralph's commits against git's own, long: 300 random steps per seed
# (make test runs a dozen). RALPH_ORACLE_SEED=S replays one seed.
test-oracle:
	RALPH_ORACLE_STEPS=$${RALPH_ORACLE_STEPS:-300} $(GO) test -count=1 -run 'TestCommitsEqualGits' -v ./internal/vcs/

# The generated reference pages (docs/cli.md, docs/configuration.md);
# a test fails when the committed ones are stale.
docs:
	$(GO) generate ./internal/cli

# goreleaser check, then an offline snapshot of linux/amd64 in dist/,
# looked into (what .ci/run does; needs goreleaser, see .ci/goreleaser-version).
snapshot:
	bash .ci/release-snapshot.sh

test-short:
	$(GO) test -short ./...

lint:
	golangci-lint run ./...

# Go benchmarks, then the whole-process benchmark whose figures go in
# BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...
	$(GO) run ./tools/bench

# A short run of every fuzz target.
fuzz:
	@for pkg in $$($(GO) list ./internal/...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep ^Fuzz); do \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 10s $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin dist build

# ralph: build, test, lint, bench. `make test` is what CI runs.
GO ?= go
BIN ?= bin/ralph

.PHONY: build test test-short test-oracle lint bench fuzz clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/ralph

# The whole suite: unit tests, fuzz seeds, testscript end to end. A race
# build sleeps a second at exit by default (GORACE atexit_sleep_ms) so that
# late reports come out; the testscripts start ralph and the fake agents
# as race builds thousands of times, so the suite would spend most of its
# time asleep.
test:
	$(GO) vet ./...
	GORACE="atexit_sleep_ms=0 $(GORACE)" $(GO) test -race -count=1 ./...

# ralph's commits against git's own, long: 300 random steps per seed
# (make test runs a dozen). RALPH_ORACLE_SEED=S replays one seed.
test-oracle:
	RALPH_ORACLE_STEPS=$${RALPH_ORACLE_STEPS:-300} $(GO) test -count=1 -run 'TestCommitsEqualGits' -v ./internal/vcs/

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
	rm -rf bin

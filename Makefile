# privbo — the two commands a newcomer needs:
#   make demo   a curator and a modeler on loopback over the shipped diabetes data
#   make test   every check CI runs (generated code, formatting, vet, staticcheck, tests with -race)

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/.bin
PKGS := ./...

.PHONY: all build deps generate check-generate fmt lint test test-short demo bench fuzz clean

all: build

deps:
	@./scripts/install-deps.sh

build:
	$(GO) build -o $(BIN)/curator ./cmd/curator
	$(GO) build -o $(BIN)/modeler ./cmd/modeler

generate: deps
	./scripts/generate.sh

check-generate: deps
	./scripts/generate.sh --check

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '\.pb\.go$$')

lint: deps
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(BIN)/staticcheck $(PKGS)

# Two passes: every test under the race detector, except the statistical ones, which
# scripts/statistical.sh then runs without it (internal/testrace). Lint has already run
# go vet over every package, so the passes do not vet again. A third pass builds
# pkg/gpucb for x86-64-v3, where the compiler may fuse multiply-adds, and checks
# that its lazy and eager loops still agree bit for bit (on a CPU that runs v3).
test: check-generate lint
	$(GO) test -race -vet=off -count=1 -timeout 20m $(PKGS)
	./scripts/statistical.sh -vet=off
	if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then \
	  GOAMD64=v3 $(GO) test -vet=off -count=1 -run 'TestSIMDMatchesScalar|TestKernel4MatchesKernelAt|TestLazyMatchesEager$$' ./pkg/gpucb; fi

test-short:
	$(GO) test -short -race $(PKGS)

demo: build
	./scripts/demo.sh

bench: deps
	./scripts/bench.sh

fuzz:
	./scripts/fuzz.sh

clean:
	rm -rf $(BIN)/curator $(BIN)/modeler

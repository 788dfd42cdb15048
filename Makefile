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
# go vet over every package, so the passes do not vet again.
test: check-generate lint
	$(GO) test -race -vet=off -count=1 -timeout 20m $(PKGS)
	./scripts/statistical.sh -vet=off

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

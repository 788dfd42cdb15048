#!/usr/bin/env bash
# Regenerates the Go code for proto/ with pinned plugin versions.
#   scripts/generate.sh          regenerate in place
#   scripts/generate.sh --check  fail when the committed code differs from a regeneration
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.0
bin="$(pwd)/.bin"
mkdir -p "$bin"
if ! command -v protoc >/dev/null; then
  echo "generate: protoc not found; run scripts/install-deps.sh (installs Debian's protobuf-compiler)" >&2
  exit 1
fi
[ -x "$bin/protoc-gen-go-$PROTOC_GEN_GO_VERSION" ] || {
  GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
  mv "$bin/protoc-gen-go" "$bin/protoc-gen-go-$PROTOC_GEN_GO_VERSION"
}
[ -x "$bin/protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC_VERSION" ] || {
  GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
  mv "$bin/protoc-gen-go-grpc" "$bin/protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC_VERSION"
}
out=proto
if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
protoc -I proto \
  --plugin=protoc-gen-go="$bin/protoc-gen-go-$PROTOC_GEN_GO_VERSION" \
  --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC_VERSION" \
  --go_out="$out" --go_opt=paths=source_relative \
  --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
  $(cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
if [ "$out" != proto ]; then
  status=0
  while IFS= read -r f; do
    rel=${f#"$out"/}
    if ! cmp -s "$f" "proto/$rel"; then
      echo "generate: proto/$rel is stale; run 'make generate' and commit the result" >&2
      status=1
    fi
  done < <(find "$out" -name '*.go')
  committed=$(find proto -name '*.pb.go' | wc -l)
  fresh=$(find "$out" -name '*.go' | wc -l)
  if [ "$committed" != "$fresh" ]; then
    echo "generate: proto/ has $committed generated files, a regeneration gives $fresh" >&2
    status=1
  fi
  exit $status
fi

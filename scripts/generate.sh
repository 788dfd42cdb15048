#!/usr/bin/env bash
# Regenerates the code for proto/: the Go code in proto/ with pinned plugin versions, and
# the Python client's stubs in clients/python/privbo/ (messages, type stubs and the gRPC
# service) with Debian's protoc and grpc_python_plugin, whose versions match Debian's
# python3-protobuf and python3-grpcio (scripts/install-deps.sh installs all of them).
# Also the Python client's google.rpc messages (Status, ErrorInfo, RetryInfo, …) in
# clients/python/privbo/_googleapis, from googleapis' status.proto and error_details.proto
# as compiled into the Go module google.golang.org/genproto/googleapis/rpc that go.mod
# pins (internal/rpcdescriptors writes their descriptors; Debian packages no .proto or
# Python module of them).
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
if ! grpc_python_plugin=$(command -v grpc_python_plugin); then
  echo "generate: grpc_python_plugin not found; run scripts/install-deps.sh (installs Debian's protobuf-compiler-grpc)" >&2
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
pyout=clients/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = "--check" ]; then
  out=$tmp/go pyout=$tmp/python
  mkdir -p "$out" "$pyout"
fi
protos=$(cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
# shellcheck disable=SC2086 # $protos is a list of paths without spaces
protoc -I proto \
  --plugin=protoc-gen-go="$bin/protoc-gen-go-$PROTOC_GEN_GO_VERSION" \
  --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC_VERSION" \
  --go_out="$out" --go_opt=paths=source_relative \
  --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
  $protos
# shellcheck disable=SC2086
protoc -I proto \
  --plugin=protoc-gen-grpc_python="$grpc_python_plugin" \
  --python_out="$pyout" --pyi_out="$pyout" --grpc_python_out="$pyout" \
  $protos
# googleapis' google.rpc messages, from the descriptors of the pinned Go module.
rpcset=$tmp/google-rpc.pb
go run ./internal/rpcdescriptors >"$rpcset"
mkdir -p "$pyout/privbo/_googleapis"
protoc --descriptor_set_in="$rpcset" \
  --python_out="$pyout/privbo/_googleapis" --pyi_out="$pyout/privbo/_googleapis" \
  google/rpc/status.proto google/rpc/error_details.proto
if [ "$out" != proto ]; then
  status=0
  # compare GENERATED_DIR COMMITTED_DIR FIND_ARGS...: every file a regeneration gives must
  # equal the committed one, and the committed tree must hold no other generated file.
  compare() {
    local fresh=$1 committed=$2 f rel
    shift 2
    while IFS= read -r f; do
      rel=${f#"$fresh"/}
      if ! cmp -s "$f" "$committed/$rel"; then
        echo "generate: $committed/$rel is stale; run 'make generate' and commit the result" >&2
        status=1
      fi
    done < <(find "$fresh" -type f "$@")
    local n_committed n_fresh
    n_committed=$(find "$committed" -type f "$@" 2>/dev/null | wc -l || true)
    n_fresh=$(find "$fresh" -type f "$@" | wc -l)
    if [ "$n_committed" != "$n_fresh" ]; then
      echo "generate: $committed has $n_committed generated files, a regeneration gives $n_fresh" >&2
      status=1
    fi
  }
  compare "$out" proto -name '*.pb.go'
  # Only the package's directory, where protoc writes: a build or a virtual environment
  # elsewhere under clients/python holds copies that are no part of the committed code.
  compare "$pyout/privbo" clients/python/privbo \( -name '*_pb2.py' -o -name '*_pb2.pyi' -o -name '*_pb2_grpc.py' \)
  exit $status
fi

#!/usr/bin/env bash
# Installs what building, testing and generating privbo needs on a fresh Debian machine:
# Debian's protobuf-compiler (only if protoc is missing), Debian's chromium (only if
# /usr/bin/chromium is missing; the report test renders a page in it), the Go modules,
# and pinned Go tools (protoc plugins, staticcheck, benchstat) into ./.bin. Safe to run
# repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK_VERSION=v0.8.2
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da
bin="$(pwd)/.bin"
mkdir -p "$bin"

if ! command -v protoc >/dev/null; then
  echo "install-deps: installing Debian's protobuf-compiler" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq protobuf-compiler >/dev/null
fi

# Debian's chromium renders the study report in a headless browser for its integration test.
if [ ! -x /usr/bin/chromium ]; then
  echo "install-deps: installing Debian's chromium" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

go mod download

install_tool() { # name module version
  local name=$1 mod=$2 version=$3
  if [ ! -x "$bin/$name-$version" ]; then
    echo "install-deps: go install $mod@$version" >&2
    GOBIN="$bin" go install "$mod@$version"
    mv "$bin/$name" "$bin/$name-$version"
  fi
  ln -sf "$name-$version" "$bin/$name"
}
install_tool staticcheck honnef.co/go/tools/cmd/staticcheck "$STATICCHECK_VERSION"
install_tool benchstat golang.org/x/perf/cmd/benchstat "$BENCHSTAT_VERSION"

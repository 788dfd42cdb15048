#!/usr/bin/env bash
# Installs what building, testing and generating privbo needs on a fresh Debian machine:
# Debian's protobuf-compiler (only if protoc is missing), Debian's chromium (only if
# /usr/bin/chromium is missing; the report test renders a page in it), GNU time (only if
# /usr/bin/time is missing; scripts/registry.sh measures peak memory with it), the Debian packages
# of the Python client (python3, python3-grpcio, python3-protobuf, python3-numpy,
# python3-sklearn, what installs it as a package — python3-venv, python3-setuptools,
# python3-wheel — and protobuf-compiler-grpc's grpc_python_plugin, each only if not
# installed), the Go modules, and pinned Go tools (protoc plugins, staticcheck,
# benchstat) into ./.bin. Safe to run repeatedly, and alongside another apt run (it waits
# for apt's locks).
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK_VERSION=v0.8.2
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da
bin="$(pwd)/.bin"
mkdir -p "$bin"

# apt_get runs apt-get as root. It waits while another apt or dpkg run holds a lock
# instead of failing at once: dpkg's frontend lock through DPkg::Lock::Timeout, and the
# package lists' lock of `apt-get update`, which that option does not cover on every apt,
# by asking again (every 5 s, up to 10 minutes) while the error names a lock.
apt_get() {
  local sudo="" err tries=0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  err=$(mktemp)
  until $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@" 2>"$err"; do
    if ! grep -qi 'lock' "$err" || [ $((tries += 1)) -ge 120 ]; then
      cat "$err" >&2
      rm -f "$err"
      return 1
    fi
    echo "install-deps: another apt or dpkg run holds its lock; waiting" >&2
    sleep 5
  done
  cat "$err" >&2
  rm -f "$err"
}

# installed PKG: whether Debian's package PKG is installed.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
# Debian's protobuf-compiler (protoc) generates the Go and Python code of proto/.
command -v protoc >/dev/null || missing+=(protobuf-compiler)
# Debian's chromium renders the study report in a headless browser for its integration test.
[ -x /usr/bin/chromium ] || missing+=(chromium)
# GNU time measures each side's peak memory in scripts/registry.sh (and its integration test).
[ -x /usr/bin/time ] || missing+=(time)
# The Python client (clients/python): Debian's gRPC Python plugin of protoc generates its
# stubs; the stubs run on Debian's python3-grpcio and python3-protobuf; numpy (optional
# for users) holds the released matrix and scikit-learn (likewise) runs the example
# study's Gaussian process. integration/python_test.go installs the package as a user
# does — pip in a virtual environment of Debian's python3 (python3-venv, which brings pip)
# that sees these packages, building it with python3-setuptools and python3-wheel — and
# runs its tests and the example.
for pkg in python3 python3-grpcio python3-protobuf python3-numpy python3-sklearn python3-venv python3-setuptools \
  python3-wheel protobuf-compiler-grpc; do
  installed "$pkg" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian's ${missing[*]}" >&2
  apt_get update -qq
  apt_get install -y -qq "${missing[@]}" >/dev/null
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

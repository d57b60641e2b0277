#!/usr/bin/env bash
# The project's test command: go vet, then every Go test. Integration tests
# run against a real Temporal server embedded in the test binaries (in-memory
# or temporary SQLite, free ports), so nothing needs to be installed or
# running beforehand: Go and its module proxy are enough.
#
# A cold build compiles the Temporal server (about 8 minutes on 2 cores);
# the timeout leaves room for that on a slow CI machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# The MCP conformance suite (mcpmount's TestConformance) runs too; it needs
# npx (Node.js and npm), which fetches Node 22 and the suite from npm.
# OPENWOP_CONFORMANCE=0 skips it.
if [ "${OPENWOP_CONFORMANCE:-1}" = 0 ]; then
  unset OPENWOP_CONFORMANCE
else
  export OPENWOP_CONFORMANCE=1
fi

# The client matrix (internal/testing/clientmatrix's TestClientMatrix) runs too: real
# MCP clients (the official TypeScript client with the Tasks extension, the
# TypeScript SDK v1, the MCP Inspector, the go-sdk) against cmd/server. It
# needs npm: it installs the clients pinned in
# internal/testing/clientmatrix/testdata/package-lock.json with npm ci, once, into
# the user cache directory (OPENWOP_CLIENTS_CACHE overrides it). The tests
# of internal/upstream against @modelcontextprotocol/server-everything
# (pinned in internal/upstream/testdata/everything) install it the same way
# and run with it. OPENWOP_CLIENTS=0 skips them all.
# The matrix's TestInspectorWeb drives the Inspector's web client in
# headless Chromium: Debian's chromium, which apt-get installs when it is
# missing (Playwright's own browser builds are not fetched).
if [ "${OPENWOP_CLIENTS:-1}" = 0 ]; then
  unset OPENWOP_CLIENTS
else
  export OPENWOP_CLIENTS=1
  if [ ! -x /usr/bin/chromium ]; then
    sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
fi

# Formatting, vet and staticcheck (pinned; fetched from the module proxy
# once, then cached).
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "FAIL: not gofmt-formatted (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
# cmd/worker must not link the Temporal server (only cmd/server embeds one).
worker_deps=$(go list -deps ./cmd/worker)
if server_deps=$(grep '^go.temporal.io/server' <<<"$worker_deps"); then
  echo "FAIL: cmd/worker depends on $(wc -l <<<"$server_deps") go.temporal.io/server packages, e.g. $(head -n1 <<<"$server_deps");" >&2
  echo "      keep internal/app/devtemporal and internal/app (the embedded Temporal server) out of its imports." >&2
  exit 1
fi
# PostgreSQL: integration tests of the run service, the mount, the
# catalog and the REST API run a second time against Temporal persisted in
# PostgreSQL with SQL visibility (OPENWOP_TEST_PERSISTENCE=postgres;
# internal/testing/pgtest starts a server from the PostgreSQL 15 binaries,
# which apt-get installs when they are missing). SQLite stays the default
# of every other test. OPENWOP_POSTGRES=0 skips this.
if [ "${OPENWOP_POSTGRES:-1}" != 0 ]; then
  if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  OPENWOP_TEST_PERSISTENCE=postgres go test -count=1 -p 1 -timeout 20m \
    -run 'TestStartGetAwait|TestResolve$|TestCancel|TestEventsLongPoll|TestList|TestSearchAttributesMissing|TestRoundTrips|TestIntegrationTaskLifecycle|TestIntegrationInputRequests|TestListen|TestLive|TestPublishConflict|TestE2EWorkersGone|TestE2ETwoTaskQueues|TestE2EVersionedRollout|TestPublishVersionConflicts|TestPublicationsOutOfDefaultList|TestIntegrationCancellable|TestIntegrationList' \
    ./runs ./mcpmount ./catalog ./restapi
fi
# Build every test binary in parallel first, then run the packages one at a
# time: each integration package starts its own Temporal server, and on a
# 2-core machine running them side by side only makes their timings noisy.
go test -count=1 -run '^$' ./... >/dev/null
go test -count=1 -p 1 -timeout 45m ./...

# Fuzzing (docs/testing.md#fuzzing): each decoder of untrusted input is
# fuzzed for OPENWOP_FUZZTIME (20000x: a count of inputs, not a duration,
# since go1.26's fuzzing coordinator can fail a target with "context
# deadline exceeded" when a duration ends on a loaded machine,
# go.dev/issue/75804) on top of its seeds, which the run above
# already tried. Each package's fuzzing binary is built once (the first
# such build instruments every linked package: a cold build's time; later
# ones come from the build cache), then run once per target, as Go fuzzes
# one target at a time. OPENWOP_FUZZ=0 skips this.
if [ "${OPENWOP_FUZZ:-1}" != 0 ]; then
  fuzzbin=$(mktemp -d)
  fuzzcache="$(go env GOCACHE)/fuzz/$(go list -m)"
  while read -r pkg targets; do
    go test -c -fuzz . -o "$fuzzbin/fuzz.test" "./$pkg"
    for target in $targets; do
      (cd "$pkg" && "$fuzzbin/fuzz.test" -test.run '^$' -test.fuzz "^$target\$" -test.timeout 5m \
        -test.fuzztime "${OPENWOP_FUZZTIME:-20000x}" -test.fuzzminimizetime 100x -test.fuzzcachedir "$fuzzcache/$pkg") </dev/null
    done
  done <<'FUZZ'
mcpmount FuzzDecode
mcpmount/internal/core FuzzInputResponses
mcpmount/internal/requeststate FuzzOpen FuzzOpenSigned FuzzSealOpen
runs FuzzOpenCursor
signals/answers FuzzCheckAnswer
auth FuzzPeekIssuer FuzzVerify FuzzKeySet
catalog FuzzLoadDeclarations
FUZZ
  rm -rf "$fuzzbin"
fi

# examples/refund is a module of its own (a replace points at this
# checkout): its tests use the test kit (workflows/workflowstest) as a tool
# author's tests do.
(cd examples/refund && go vet ./... && go test -count=1 ./...)

#!/usr/bin/env bash
# Runs backstream's whole test suite: formatting, vet, and every test with the
# race detector, against real sandbox MariaDB servers and the real mariabackup
# and mbstream (installed first if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/minio.sh install

unformatted=$(gofmt -l cmd internal)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
# staticcheck, pinned so that a new release cannot fail an unchanged tree.
bindir=$(go env GOBIN); bindir=${bindir:-$(go env GOPATH)/bin}
staticcheck=$bindir/staticcheck
if ! "$staticcheck" -version 2>/dev/null | grep -qF '(0.8.2)'; then
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$staticcheck" ./...
go test -race -timeout 20m -count=1 ./... "$@"

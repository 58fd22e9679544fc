#!/usr/bin/env bash
# Builds backstream and runs its demo: a throwaway MariaDB server with sample
# data is backed up, restored and prepared into a second datadir, a second
# throwaway server starts on it, and every table's checksum is compared.
# No existing server is touched. Extra arguments go to `backstream demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
mkdir -p bin
go build -o bin/backstream ./cmd/backstream
exec bin/backstream demo "$@"

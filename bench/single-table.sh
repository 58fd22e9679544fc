#!/usr/bin/env bash
# Restoring one table of a physical backup into a running server
# (restore --table --apply-to) against restoring the whole backup
# (restore --prepare), from a local repository and from MinIO, on one
# sysbench dataset, in one run.
#
#   bench/single-table.sh                   # about 1 GB of sysbench data (4 tables), N=2, 2 rounds
#   SIZE_GB=2 ROUNDS=3 BACKENDS=minio bench/single-table.sh
#
# Each backend gets one backup of the source. Each round restores the whole
# backup with --prepare into an empty directory, and imports sbtest.sbtest1
# beside the live table (--as sbtest.sbtest1_restored) into the running
# source, whose CHECKSUM TABLE must then equal the backed-up table's, or the
# script stops. Bytes read from the repository are what the restore's own
# accounting says it read (--progress plain's summary: "<n> in"); the
# system files are those the import needs besides the table (the top of
# the datadir, the mysql schema), as the local backup's manifest lists
# them.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
N=${N:-2}
TABLES=${TABLES:-4}
ROUNDS=${ROUNDS:-2}
BACKENDS=${BACKENDS:-local minio}
./scripts/deps.sh sysbench bc jq >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
go build -o "$BENCH_OUT/pitrload" ./bench/pitrload
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/single-table
DATA=$(dataset_dir $((SIZE_GB * 1000)))
BUCKET=bench-single-table
rm -rf "$WORK"; mkdir -p "$WORK"

cleanup() {
  sandbox_stop
  if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi
}
trap cleanup EXIT

dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
sandbox_stop
dataset_copy "$DATA" "$WORK/src"
sandbox_start "$WORK/src"
SRC=$SANDBOX_SOCKET
sql() { mariadb --no-defaults --socket="$SRC" -uroot -N -B -e "$1"; }
table_bytes=$(sql "SELECT data_length + index_length FROM information_schema.tables WHERE table_schema = 'sbtest' AND table_name = 'sbtest1'")
want=$(sql "CHECKSUM TABLE sbtest.sbtest1" | cut -f2)

if [[ " $BACKENDS " == *" minio "* ]]; then
  # The env file holds the credentials and the endpoint: sourced, never printed.
  ./scripts/minio.sh start "$WORK/minio" >/dev/null
  source "$WORK/minio/minio.env"
  "$BENCH_OUT/pitrload" mkbucket "$BUCKET"
fi
repo_of() { case $1 in local) echo "$WORK/repo" ;; minio) echo "s3://$BUCKET/repo" ;; esac; }

# bytes_in LOG: the bytes a restore read, from its plain progress summary.
bytes_in() { grep -o '[0-9.]* [KMGT]\?i\?B in,' "$1" | tail -1 | awk '{print $1 $2}' | numfmt --from=iec-i --suffix=B | tr -d B; }

declare -A T READ STORED
keys=()
for backend in $BACKENDS; do
  repo=$(repo_of "$backend")
  "$BS" init --repo "$repo" >/dev/null
  "$BS" backup --repo "$repo" --parallel "$N" --no-defaults --socket "$SRC" --user root --progress none >/dev/null
  STORED[$backend]=$("$BS" list --repo "$repo" --json | jq -r 'last | .stored_bytes')
  if [ "$backend" = local ]; then
    # What the import needs besides the table, as the manifest lists it:
    # the files at the datadir's top (system tablespace, undo, the redo
    # the backup copied, metadata) and the mysql schema; raw bytes.
    SYSTEM=$(jq '[.files[] | select((.path | contains("/") | not) or (.path | startswith("mysql/"))) | .size] | add' "$repo"/backups/*/manifest.json)
  fi
  keys+=("full_$backend" "table_$backend")
  for round in $(seq 1 "$ROUNDS"); do
    echo "$backend: round $round of $ROUNDS" >&2
    dir=$WORK/restore
    rm -rf "$dir"
    sync # the restore syncs what it writes, not what was dirty before
    run "full_$backend" "$BS" restore latest --repo "$repo" --target-dir "$dir" --parallel "$N" --prepare --progress none
    rm -rf "$dir"
    sql "DROP TABLE IF EXISTS sbtest.sbtest1_restored"
    sync
    start=$(now)
    "$BS" restore latest --repo "$repo" --table sbtest.sbtest1 --apply-to --no-binlog --as sbtest.sbtest1_restored --parallel "$N" \
      --no-defaults --socket "$SRC" --user root --progress plain >/dev/null 2>"$WORK/table.log" ||
      { cat "$WORK/table.log" >&2; exit 1; }
    T[table_$backend]="${T[table_$backend]:-} $(echo "$(now) - $start" | bc -l | xargs printf '%.2f')"
    READ[$backend]=$(bytes_in "$WORK/table.log")
    got=$(sql "CHECKSUM TABLE sbtest.sbtest1_restored" | cut -f2)
    if [ "$got" != "$want" ]; then
      echo "$backend: sbtest.sbtest1_restored has CHECKSUM TABLE $got, the backed-up table $want" >&2
      exit 1
    fi
  done
done

echo
echo "dataset: sysbench, $TABLES tables, datadir $(human "$(size_of "$DATA/data" --exclude='mariadb-bin*')"); the table sbtest.sbtest1: $(human "$table_bytes"); N=$N; $(nproc) cores; best (median) of $ROUNDS rounds"
echo
echo "system files the import needs besides the table (top of the datadir, mysql schema; raw): $(human "${SYSTEM:-0}")"
echo
row "repository" "whole backup, restore --prepare s" "one table, --table --apply-to s" "table / whole" "bytes read for the table" "read / table size" "read / (table + system files)"
row "---" "---:" "---:" "---:" "---:" "---:" "---:"
for backend in $BACKENDS; do
  bf=$(best "full_$backend") bt=$(best "table_$backend")
  row "$backend" "$bf ($(median ${T[full_$backend]}))" "$bt ($(median ${T[table_$backend]}))" "$(ratio "$bt" "$bf")x" \
    "$(human "${READ[$backend]}") of $(human "${STORED[$backend]}") stored" "$(ratio "${READ[$backend]}" "$table_bytes")x" "$(ratio "${READ[$backend]}" "$((table_bytes + ${SYSTEM:-0}))")x"
done
echo
echo "all runs (s): $(for k in "${keys[@]}"; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"

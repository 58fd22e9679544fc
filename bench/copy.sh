#!/usr/bin/env bash
# Copying databases from one server into another: backstream copy against
# the peers' pipelines, with the same parallelism N, on one sysbench
# dataset, in one run.
#
#   bench/copy.sh                          # about 1 GB of sysbench data, N=2, 3 rounds
#   SIZE_MB=300 ROUNDS=1 bench/copy.sh     # a few minutes
#   SIZE_MB=4000 N=4 bench/copy.sh
#
# Pipelines, each from nothing to a loaded, checked target:
#   backstream copy --from SRC --to DST            nothing on disk
#   mydumper -t N; myloader -t N                   dump to a directory, then load it
#   mydumper --stream | myloader --stream          only where mydumper has --stream (releases after 0.10);
#                                                  Debian 12 ships 0.10.0, which has not: the row says so
#   backstream backup --logical; restore           into a repository, then out of it
#
# Each round runs every pipeline once, in turn. The table shows the best of
# the rounds (a shared VM's noise only ever adds time) and the median; every
# run is printed below it. Times are wall clock. A pipeline that stages its
# dump on disk is timed until the load ends; its dump is fsynced before the
# load starts (as backstream's repository is), so the disk is part of the
# cost. Each load goes into a fresh, empty server started without a binary
# log (TARGET_BINLOG=1 turns it on for all); creating and starting that
# server is not timed. Every load is checked: CHECKSUM TABLE of each sbtest
# table on the target must equal the source's, or the script stops with an
# error.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_MB=${SIZE_MB:-1000}
N=${N:-2}
TABLES=${TABLES:-4}
ROUNDS=${ROUNDS:-3}
TARGET_BINLOG=${TARGET_BINLOG:-0}
./scripts/deps.sh mydumper sysbench bc >/dev/null

BS=$BENCH_OUT/backstream
go build -o "$BS" ./cmd/backstream
WORK=$BENCH_OUT/copy
DATA=$(dataset_dir "$SIZE_MB")
mkdir -p "$WORK"

# mydumper and myloader stream into each other only in releases later than
# the 0.10 Debian 12 ships.
STREAM=0
if mydumper --help 2>&1 | grep -q -- '--stream' && myloader --help 2>&1 | grep -q -- '--stream'; then
  STREAM=1
fi
MYD_VERSION=$(mydumper --version 2>&1 | awk '{print $2}' | tr -d ,)

SRC_PID=
stop_all() { sandbox_stop; SANDBOX_PID=$SRC_PID sandbox_stop; }
trap stop_all EXIT

dataset_start "$DATA" "$SIZE_MB" "$TABLES"
SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID SANDBOX_PID=
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')
find "$DATA/data" -type f -exec cat {} + >/dev/null
SRC_SUMS=$(sbtest_source_checksums "$SRC" "$TABLES" "$DATA")

dump_then_load() { # dump_then_load DIR DUMP... -- LOAD...: a dump fsynced, then its load
  local dir=$1; shift
  local dump=()
  while [ "$1" != -- ]; do dump+=("$1"); shift; done
  shift
  durably "$dir" "${dump[@]}" && "$@"
}
declare -A T B M

keys=(bs_copy myd bs_backup)
[ "$STREAM" = 1 ] && keys+=(myd_stream)

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2

  target_start
  run bs_copy "$BS" copy --from "$SRC" --to "$TARGET" --from-user root --to-user root --no-defaults \
    --parallel "$N" --database sbtest --progress none
  check_load "backstream copy"

  target_start
  rm -rf "$WORK/dump"
  run myd dump_then_load "$WORK/dump" mydumper -S "$SRC" -u root -B sbtest -t "$N" -o "$WORK/dump" \
    -- myloader -S "$TARGET" -u root -t "$N" -d "$WORK/dump"
  check_load "mydumper; myloader"
  rm -rf "$WORK/dump"

  if [ "$STREAM" = 1 ]; then
    target_start
    run myd_stream bash -o pipefail -c \
      'mydumper -S "$1" -u root -B sbtest -t "$3" --stream | myloader -S "$2" -u root -t "$3" --stream' \
      _ "$SRC" "$TARGET" "$N"
    check_load "mydumper --stream | myloader --stream"
  fi

  target_start
  rm -rf "$WORK/repo"
  "$BS" init --repo "$WORK/repo" >/dev/null
  run bs_backup dump_then_load "$WORK/repo" "$BS" backup --logical --repo "$WORK/repo" --parallel "$N" \
    --database sbtest --skip-users --no-defaults --socket "$SRC" --user root --progress none \
    -- "$BS" restore latest --repo "$WORK/repo" --parallel "$N" --no-defaults --socket "$TARGET" --user root --progress none
  check_load "backstream backup --logical; restore"
  rm -rf "$WORK/repo"
done

for k in "${keys[@]}"; do
  B[$k]=$(best "$k"); M[$k]=$(median ${T[$k]})
done

binlog="without binary log"
[ "$TARGET_BINLOG" != 1 ] || binlog="with binary log"
echo
echo "dataset: sysbench, $TABLES tables, datadir $(human "$datadir_size") (binlogs excluded); N=$N; $(nproc) cores; best (median) of $ROUNDS rounds; into a fresh server $binlog; mydumper $MYD_VERSION"
echo
row "pipeline" "on disk" "seconds" "time vs backstream copy"
row "---" "---" "---:" "---:"
line() { # line NAME KEY DISK
  row "$1" "$3" "${B[$2]} (${M[$2]})" "$(ratio "${B[$2]}" "${B[bs_copy]}")x"
}
line "backstream copy --parallel $N" bs_copy "nothing"
line "mydumper -t $N; myloader -t $N" myd "the dump"
if [ "$STREAM" = 1 ]; then
  line "mydumper --stream \\| myloader --stream (-t $N)" myd_stream "nothing"
else
  row "mydumper --stream \\| myloader --stream" "-" "not run: mydumper $MYD_VERSION has no --stream (later releases added it)" "-"
fi
line "backstream backup --logical; restore (--parallel $N, zstd)" bs_backup "the backup"
echo
echo "all runs (s): $(for k in "${keys[@]}"; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
echo "backstream copy / mydumper dump-then-load: $(ratio "${B[bs_copy]}" "${B[myd]}")x; / backstream backup + restore: $(ratio "${B[bs_copy]}" "${B[bs_backup]}")x"

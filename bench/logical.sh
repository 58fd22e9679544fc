#!/usr/bin/env bash
# Logical dump and load: backstream against mariadb-dump and mydumper/myloader,
# with the same parallelism N, on one sysbench dataset, in one run.
#
#   bench/logical.sh                        # about 1 GB of sysbench data, N=2, 3 rounds
#   SIZE_GB=4 N=4 ROUNDS=5 bench/logical.sh
#   SKIP_BACKSTREAM=1 bench/logical.sh      # the peers only
#   VERSION=11.8 SIZE_MB=300 bench/logical.sh  # on MariaDB 11.8 (scripts/versions.sh), adding
#                                           # mariadb-dump --dir / mariadb-import --dir (11.6+)
#
# Each round runs every pipeline once, in turn. The table shows the best of
# the rounds (a shared VM's noise only ever adds time) and the median; every
# run is printed below it.
# Times are wall clock. A dump is timed until its output is on disk: the
# peers' files are fsynced after they exit, as backstream's repository does
# with its objects before it exits. A load is timed into a fresh, empty server; creating and starting
# that server is not timed. The load servers run without a binary log, so that
# no tool gains by skipping it (myloader writes none by default, mariadb <
# dump.sql would); TARGET_BINLOG=1 turns it on for all of them.
# Every load is checked: CHECKSUM TABLE of each sbtest table on the loaded
# server must equal the source's, or the script stops with an error. A load
# that loads nothing must not look fast.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_GB=${SIZE_GB:-1}
SIZE_MB=${SIZE_MB:-$((SIZE_GB * 1000))}
VERSION=${VERSION:-}
if [ -n "$VERSION" ]; then
  # Every server, mariadb-dump, mariadb-import and mariadb of the run is that
  # version's; backstream is told where its tools are.
  MARIADB_BASEDIR=$(./scripts/versions.sh basedir "$VERSION")
  export MARIADB_BASEDIR BACKSTREAM_MARIADB_PATH=$MARIADB_BASEDIR/bin
fi
N=${N:-2}
TABLES=${TABLES:-4}
ROUNDS=${ROUNDS:-3}
SKIP_BACKSTREAM=${SKIP_BACKSTREAM:-0}
TARGET_BINLOG=${TARGET_BINLOG:-0}
source bench/lib.sh
# mariadb-dump --dir and mariadb-import --dir came in 11.6.
DIRDUMP=0
mariadb-dump --help 2>/dev/null | grep -q -- '--dir' && DIRDUMP=1
./scripts/deps.sh mydumper sysbench bc >/dev/null

BS=$BENCH_OUT/backstream
[ "$SKIP_BACKSTREAM" = 1 ] || go build -o "$BS" ./cmd/backstream
WORK=$BENCH_OUT/logical
DATA=$(dataset_dir "$SIZE_MB")
# Another version's server keeps a dataset of its own (a datadir is not shared
# across versions).
[ -z "$VERSION" ] || DATA=$DATA-$VERSION
mkdir -p "$WORK"

# Two servers run at once: the source for the whole run, and one load target
# at a time. sandbox_start/stop track the latter; the source's pid is kept here.
SRC_PID=
stop_all() { sandbox_stop; SANDBOX_PID=$SRC_PID sandbox_stop; }
trap stop_all EXIT

dataset_start "$DATA" "$SIZE_MB" "$TABLES"
SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID SANDBOX_PID=
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')

# Everyone reads the source from memory: the files from the page cache, and
# as much as fits from the buffer pool, which the checksum pass fills.
find "$DATA/data" -type f -exec cat {} + >/dev/null
SRC_SUMS=$(sbtest_source_checksums "$SRC" "$TABLES" "$DATA")

declare -A T B M S

keys=(dump_dump dump_load myd_dump myd_load mydc_dump mydc_load)
[ "$DIRDUMP" = 0 ] || keys+=(dir_dump dir_load)
[ "$SKIP_BACKSTREAM" = 1 ] || keys=(bs_dump bs_load "${keys[@]}")

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2
  if [ "$SKIP_BACKSTREAM" != 1 ]; then
    rm -rf "$WORK/repo"
    "$BS" init --repo "$WORK/repo" >/dev/null
    run bs_dump durably "$WORK/repo" "$BS" backup --logical --repo "$WORK/repo" --parallel "$N" \
      --no-defaults --socket "$SRC" --user root --progress none
    S[bs]=$(size_of "$WORK/repo")
    target_start
    run bs_load "$BS" restore latest --repo "$WORK/repo" --parallel "$N" \
      --no-defaults --socket "$TARGET" --user root --progress none
    check_load backstream
    rm -rf "$WORK/repo"
  fi

  run dump_dump durably "$WORK/dump.sql" bash -o pipefail -c \
    'mariadb-dump --no-defaults --socket="$1" -uroot --single-transaction --databases sbtest > "$2"' \
    _ "$SRC" "$WORK/dump.sql"
  S[dump]=$(size_of "$WORK/dump.sql")
  target_start
  run dump_load bash -c 'mariadb --no-defaults --socket="$1" -uroot < "$2"' _ "$TARGET" "$WORK/dump.sql"
  check_load mariadb-dump
  rm -f "$WORK/dump.sql"

  # mydumper 0.10 (Debian 12) compresses with gzip only (-c); myloader reads
  # the .gz files as they are.
  for k in myd mydc; do
    out=$WORK/$k name=mydumper compress=()
    [ "$k" = myd ] || name="mydumper -c" compress=(-c)
    rm -rf "$out"
    run "${k}_dump" durably "$out" mydumper -S "$SRC" -u root -B sbtest -t "$N" "${compress[@]}" -o "$out"
    S[$k]=$(size_of "$out")
    target_start
    run "${k}_load" myloader -S "$TARGET" -u root -t "$N" -d "$out"
    check_load "$name"
    rm -rf "$out"
  done

  # 11.6+: one directory per database, a .sql (schema) and a .txt (data,
  # LOAD DATA format) file per table, dumped and loaded N tables at a time.
  if [ "$DIRDUMP" = 1 ]; then
    out=$WORK/dir
    rm -rf "$out"; mkdir -p "$out"   # mariadb-dump --dir wants it to exist
    run dir_dump durably "$out" mariadb-dump --no-defaults --socket="$SRC" -uroot --single-transaction \
      --dir="$out" --parallel="$N" --databases sbtest
    S[dir]=$(size_of "$out")
    target_start
    run dir_load mariadb-import --no-defaults --socket="$TARGET" -uroot --dir="$out" --parallel="$N"
    check_load "mariadb-dump --dir"
    rm -rf "$out"
  fi
done

for k in "${keys[@]}"; do
  B[$k]=$(best "$k"); M[$k]=$(median ${T[$k]})
done

binlog="without binary log"
[ "$TARGET_BINLOG" != 1 ] || binlog="with binary log"
echo
echo "server: $(mariadb --no-defaults --socket="$SRC" -uroot -N -B -e 'SELECT VERSION()')"
echo "dataset: sysbench, $TABLES tables, datadir $(human "$datadir_size") (binlogs excluded); N=$N; $(nproc) cores; best (median) of $ROUNDS rounds; loads into a fresh server $binlog"
echo
row "pipeline" "dump s" "load s" "output" "dump time vs backstream" "load time vs backstream"
row "---" "---:" "---:" "---:" "---:" "---:"
line() { # line NAME KEY
  local vs_dump=- vs_load=-
  if [ "$SKIP_BACKSTREAM" != 1 ]; then
    vs_dump=$(ratio "${B[${2}_dump]}" "${B[bs_dump]}")x
    vs_load=$(ratio "${B[${2}_load]}" "${B[bs_load]}")x
  fi
  row "$1" "${B[${2}_dump]} (${M[${2}_dump]})" "${B[${2}_load]} (${M[${2}_load]})" "$(human "${S[$2]}")" \
    "$vs_dump" "$vs_load"
}
[ "$SKIP_BACKSTREAM" = 1 ] || line "backstream --logical (zstd)" bs
line "mariadb-dump --single-transaction; mariadb < dump.sql" dump
line "mydumper -t $N; myloader -t $N" myd
line "mydumper -c -t $N (gzip); myloader -t $N" mydc
[ "$DIRDUMP" = 0 ] || line "mariadb-dump --dir --parallel=$N; mariadb-import --dir --parallel=$N" dir
echo
echo "all runs (s): $(for k in "${keys[@]}"; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
if [ "$SKIP_BACKSTREAM" = 1 ]; then
  echo "backstream skipped (SKIP_BACKSTREAM=1): no ratios"
else
  echo "backstream / mydumper: dump $(ratio "${B[bs_dump]}" "${B[myd_dump]}")x, load $(ratio "${B[bs_load]}" "${B[myd_load]}")x (targets <= 1.0x, <= 0.5x)"
  echo "backstream / mariadb-dump: dump $(ratio "${B[bs_dump]}" "${B[dump_dump]}")x, load $(ratio "${B[bs_load]}" "${B[dump_load]}")x (targets <= 0.4x, <= 0.2x)"
  [ "$DIRDUMP" = 0 ] || echo "backstream / mariadb-dump --dir: dump $(ratio "${B[bs_dump]}" "${B[dir_dump]}")x, load $(ratio "${B[bs_load]}" "${B[dir_load]}")x"
fi

# Shared helpers for the benchmark scripts: a throwaway mariadbd on a free
# loopback port, timing, and table printing. Sourced, not run.

BENCH_OUT=${BENCH_OUT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/out}
mkdir -p "$BENCH_OUT"

# MARIADB_BASEDIR, when set, is another MariaDB's basedir (scripts/versions.sh
# basedir VERSION): its server and tools come first in PATH, and the servers
# get --basedir, so that every sandbox and client here is that version's.
if [ -n "${MARIADB_BASEDIR:-}" ]; then
  PATH=$MARIADB_BASEDIR/sbin:$MARIADB_BASEDIR/bin:$PATH
fi

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc -l | xargs printf '%.2f'; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }
size_of() { du -sb "$@" | awk '{s += $1} END {print s}'; }
human() { numfmt --to=iec-i --suffix=B --round=nearest --format='%.1f' "$1"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# sandbox_start DIR [extra mariadbd options...]: initialises DIR/data if
# needed and starts mariadbd on it; sets SANDBOX_SOCKET and SANDBOX_PID.
sandbox_start() {
  local dir=$1; shift
  mkdir -p "$dir/tmp"
  if [ ! -d "$dir/data/mysql" ]; then
    mariadb-install-db --no-defaults ${MARIADB_BASEDIR:+--basedir="$MARIADB_BASEDIR"} --user=root \
      --datadir="$dir/data" --tmpdir="$dir/tmp" \
      --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
  fi
  SANDBOX_SOCKET=$dir/mysqld.sock
  local port; port=$(free_port)
  mariadbd --no-defaults ${MARIADB_BASEDIR:+--basedir="$MARIADB_BASEDIR"} --user=root --datadir="$dir/data" --tmpdir="$dir/tmp" --socket="$SANDBOX_SOCKET" \
    --port="$port" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$dir/error.log" \
    --pid-file="$dir/mysqld.pid" --log-bin=mariadb-bin --server-id=1 --binlog-format=ROW \
    --innodb-buffer-pool-size="${BUFFER_POOL:-1G}" --innodb-log-file-size=256M \
    --innodb-buffer-pool-load-at-startup=OFF --innodb-buffer-pool-dump-at-shutdown=OFF \
    --character-set-server=utf8mb4 "$@" &
  SANDBOX_PID=$!
  for _ in $(seq 1 120); do
    mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0
    kill -0 "$SANDBOX_PID" 2>/dev/null || { tail -20 "$dir/error.log" >&2; return 1; }
    sleep 0.5
  done
  echo "sandbox in $dir did not start" >&2
  return 1
}

sandbox_stop() {
  [ -n "${SANDBOX_PID:-}" ] || return 0
  kill "$SANDBOX_PID" 2>/dev/null || true
  wait "$SANDBOX_PID" 2>/dev/null || true
  # (In a subshell the server is not a child, and wait returns at once:
  # its datadir is in use until it has gone.)
  while kill -0 "$SANDBOX_PID" 2>/dev/null; do sleep 0.2; done
  SANDBOX_PID=
}

# cold: writes back what is dirty and drops the page cache (as root), so
# that what is timed next reads from the disk, as on the day it is needed.
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# best KEY: the shortest of the times recorded under KEY in the caller's T
# (a shared VM's noise only ever adds time).
best() { printf '%s\n' ${T[$1]} | sort -g | head -1; }

# Row printing: a Markdown table, so the output pastes into docs/benchmarks.md.
row() { printf '| %s ' "$@"; printf '|\n'; }

# dataset_start DIR SIZE_MB TABLES: starts a sandbox on DIR holding the
# sysbench dataset the benchmarks share (TABLES tables, SIZE_MB of datadir),
# building it on first use. The benchmarks keep it in
# $BENCH_OUT/dataset-<n>g (see dataset_dir), so one script may build the
# cache another reads. DIR/dataset.ok, written once the build is complete,
# holds "tables rows": a cache of another shape, or one without that file
# (an interrupted build, or one from an older script), is refused rather than
# measured as if it were the dataset asked for.
dataset_start() {
  local dir=$1 size_mb=$2 tables=$3
  local rows have
  rows=$(dataset_rows "$size_mb" "$tables")
  if [ -f "$dir/dataset.ok" ]; then
    have=$(cat "$dir/dataset.ok")
    if [ "$have" != "$tables $rows" ]; then
      echo "dataset cache $dir holds ${have/ / tables x } rows, not the $tables tables x $rows rows asked for: remove $dir, or pick another size or TABLES" >&2
      return 1
    fi
    sandbox_start "$dir"
    return
  fi
  if [ -e "$dir/data" ]; then
    echo "dataset cache $dir has no dataset.ok (its build was interrupted, or an older script built it): remove $dir to rebuild it" >&2
    return 1
  fi
  sandbox_start "$dir"
  echo "building the sysbench dataset in $dir: $tables tables x $rows rows" >&2
  mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
  sysbench oltp_read_write --db-driver=mysql --mysql-socket="$SANDBOX_SOCKET" --mysql-user=root \
    --tables="$tables" --table-size="$rows" --threads=2 prepare >/dev/null
  # The load's binary logs are not part of a backup; drop them.
  mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'RESET MASTER'
  echo "$tables $rows" >"$dir/dataset.ok"
}

# dataset_copy DIR DEST: a fresh DEST/data copied from the cache in DIR, for
# a benchmark that writes. The cache's server must be stopped (sandbox_stop),
# so that the copy is a cleanly shut down, consistent datadir.
dataset_copy() {
  rm -rf "$2"; mkdir -p "$2"
  cp -a "$1/data" "$2/data"
}

# dataset_rows SIZE_MB TABLES: rows per table (~240 bytes per sysbench row on disk).
dataset_rows() { echo $(( $1 * 1000 / $2 * 1000 / 240 )); }

# dataset_dir SIZE_MB: where the dataset of that size is kept.
dataset_dir() {
  if (( $1 % 1000 == 0 )); then echo "$BENCH_OUT/dataset-$(( $1 / 1000 ))g"; else echo "$BENCH_OUT/dataset-$1m"; fi
}

# timed COMMAND...: prints the wall seconds; fails (naming the command) when
# the command does, so that a failed run is never reported as a time.
timed() {
  sync   # no writeback left over from the previous run
  local start; start=$(now)
  "$@" >/dev/null || { echo "failed: $*" >&2; return 1; }
  elapsed "$start"
}

# run KEY COMMAND...: times the command and records the time under KEY in
# the caller's associative array T. A plain assignment keeps set -e in force.
run() {
  local t
  t=$(timed "${@:2}")
  T[$1]="${T[$1]:-} $t"
}

# sbtest_checksums SOCKET TABLES: one "table<TAB>checksum" line per sbtest
# table, the fingerprint two servers must share to hold the same rows.
sbtest_checksums() {
  mariadb --no-defaults --socket="$1" -uroot -N -B \
    -e "CHECKSUM TABLE $(seq -f 'sbtest.sbtest%g' -s, 1 "$2")"
}

# sbtest_source_checksums SOCKET TABLES NAME: sbtest_checksums of a source
# server, failing (naming NAME) when a table is missing or unreadable: a
# comparison against an incomplete source would prove nothing.
sbtest_source_checksums() {
  local sums
  sums=$(sbtest_checksums "$1" "$2") || return 1
  if grep -q NULL <<<"$sums" || [ "$(wc -l <<<"$sums")" -ne "$2" ]; then
    echo "source $3: the sbtest tables are incomplete (NULL or wrong line count):" >&2
    echo "$sums" >&2
    return 1
  fi
  echo "$sums"
}

# The load benchmarks (logical.sh, copy.sh) load into one fresh, empty
# server at a time, in $WORK/target, without a binary log unless
# TARGET_BINLOG=1, and check every load against the source's checksums
# (SRC_SUMS, sbtest_source_checksums) over TABLES tables.
target_start() { # a fresh, empty server to load into; sets TARGET
  rm -rf "$WORK/target"
  local opts=()
  [ "${TARGET_BINLOG:-0}" = 1 ] || opts=(--skip-log-bin)
  sandbox_start "$WORK/target" "${opts[@]}"
  TARGET=$SANDBOX_SOCKET
}
check_load() { # check_load PIPELINE: the target must hold the source's rows, then goes
  local got
  got=$(sbtest_checksums "$TARGET" "$TABLES" 2>&1) || true
  if [ "$got" != "$SRC_SUMS" ]; then
    echo "$1: the loaded sbtest tables differ from the source (CHECKSUM TABLE, source < > loaded):" >&2
    diff <(echo "$SRC_SUMS") <(echo "$got") >&2 || true
    exit 1
  fi
  sandbox_stop
  rm -rf "$WORK/target"
}

durably() { # durably OUTPUT COMMAND...: runs the command, then fsyncs OUTPUT's files
  "${@:2}" && find "$1" -type f -exec sync {} +
}

# settle SOCKET: waits until the server has written every changed page to
# its files and purged the old row versions. A backup then finds the
# changes in the pages it reads, not in a redo log still to be applied and
# pages flushed while it runs, and no background flushing competes with it
# for the CPU.
settle() {
  local status dirty history
  for _ in $(seq 1 600); do
    status=$(mariadb --no-defaults --socket="$1" -uroot -N -B -e "SELECT
      MAX(IF(VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY', VARIABLE_VALUE, NULL)),
      MAX(IF(VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH', VARIABLE_VALUE, NULL))
      FROM information_schema.GLOBAL_STATUS")
    read -r dirty history <<<"$status"
    [ "$dirty" = 0 ] && [ "$history" = 0 ] && return 0
    sleep 0.5
  done
  echo "the server at $1 still has $dirty dirty pages and $history undo logs to purge after 5 minutes" >&2
  exit 1
}

# steady_memory: a virtual machine that reports its free memory to its
# host (free page reporting) gets each reported page back through a fault
# on the host when it takes the page again, at a high cost: touching 20
# GB took 139 s here, 98 s of them system time, and a restore writing 10
# GB into the page cache just after `cold` took 24-40 s where the same
# restore on memory the guest held took 12-17 s. So that the benches time
# the tools and not the host, steady_memory stops the reporting while the
# bench runs and touches the free memory once. Benches running at once
# share the change: the first records the setting ($steady.orig), each
# registers its shell's pid ($steady.d/PID), and a guard process of each,
# once its bench's shell is gone (SIGKILL included), unregisters it and
# puts the setting back only when no registered bench still runs: the
# last to end restores it. A setting already off that no bench recorded
# is left alone. Run at sourcing; STEADY_MEMORY=0 leaves the machine as
# it is.
steady_memory() {
  local p=/sys/module/page_reporting/parameters/page_reporting_order mib start
  local steady=/run/backstream-steady-memory
  [ "${STEADY_MEMORY:-1}" != 0 ] && [ -w "$p" ] || return 0
  mkdir -p "$steady.d" || return 0
  (
    flock -x 9
    if [ ! -s "$steady.orig" ]; then
      (( $(cat "$p") > 10 )) && exit 1   # off already (MAX_PAGE_ORDER is 10), not by a bench
      cat "$p" >"$steady.orig" && echo 11 >"$p"
    fi
    : >"$steady.d/$$"
  ) 9>>"$steady.lock" || return 0
  (
    trap '' HUP INT TERM
    while kill -0 $$ 2>/dev/null; do sleep 1; done
    (
      flock -x 9
      rm -f "$steady.d/$$"
      for f in "$steady.d"/*; do
        [ -e "$f" ] || continue
        kill -0 "${f##*/}" 2>/dev/null && exit 0   # another bench still runs
        rm -f "$f"
      done
      cat "$steady.orig" >"$p" && rm -f "$steady.orig"
    ) 9>>"$steady.lock"
  ) </dev/null >/dev/null 2>&1 &
  disown
  mib=$(( $(awk '/^MemFree:/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  start=$(now)
  (cd "$(dirname "${BASH_SOURCE[0]}")" && go build -o "$BENCH_OUT/memtouch" ./memtouch) || return 1
  if (( mib > 0 )); then "$BENCH_OUT/memtouch" "$mib" || return 1; fi
  echo "bench: free page reporting off while this runs (page_reporting_order $(cat "$steady.orig"), back when the last bench ends); $mib MiB of free memory touched in $(elapsed "$start") s" >&2
}
steady_memory

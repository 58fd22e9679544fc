#!/usr/bin/env bash
# Production impact: sysbench oltp_read_write runs on the source while a
# physical backup runs, without limits and under --max-rate / --max-io, and
# the throughput (TPS) and 95th-percentile latency of the seconds the backup
# ran are compared with the seconds just before it.
#
#   bench/impact.sh                                         # the 1 GB sysbench dataset, 4 settings
#   SIZE_MB=60 TABLES=2 WARMUP=2 DURATION=5 \
#     SETTINGS='unlimited;--max-rate 16MiB/s;--max-io 10;--logical --max-rate 8MiB/s' bench/impact.sh   # a smoke run
#
# Environment:
#   SIZE_GB / SIZE_MB  dataset size (SIZE_MB wins; whole GB share the cache of bench/physical.sh)
#   TABLES             sysbench tables (4)
#   THREADS            sysbench client threads (the number of cores: one client
#                      per core keeps the server busy without clients queueing
#                      behind each other, so TPS shows the spare capacity the
#                      backup takes away and p95 the contention it adds)
#   N                  backup --parallel (2, as the other benchmarks)
#   WARMUP             seconds of load before the baseline window (10)
#   DURATION           seconds of the baseline window (30)
#   SETTINGS           backup options per setting, separated by ';' ("unlimited" is none;
#                      --logical works too)
#   TIMEOUT            seconds a backup may take before the run fails (900): a
#                      --max-io too low for the write load never catches up
#                      with the redo log
#
# For each setting, one sysbench run reports every second (--report-interval=1):
# WARMUP seconds, then the DURATION seconds of the baseline, then the backup
# into a fresh local repository, then a second or two more. A reported second
# belongs to the window its middle falls in (the second holding the middle of
# a backup shorter than a second counts for it). TPS is the mean over the
# window's seconds; p95 is the mean of the seconds' 95th percentiles weighted
# by their transactions (sysbench reports no histogram per second, so this
# estimates the window's p95 rather than computing it exactly). Every backup
# is verified afterwards, outside the window. The last column is what the
# backup itself reports of its cost (--json's impact): how long it blocked
# commits and DDL, and its SELECT 1 probe's median and slowest answer.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
SIZE_MB=${SIZE_MB:-$((SIZE_GB * 1000))}
TABLES=${TABLES:-4}
THREADS=${THREADS:-$(nproc)}
N=${N:-2}
WARMUP=${WARMUP:-10}
DURATION=${DURATION:-30}
SETTINGS=${SETTINGS:-unlimited;--max-rate 100MiB/s;--max-rate 40MiB/s;--max-io 20}
TIMEOUT=${TIMEOUT:-900}
./scripts/deps.sh sysbench bc jq >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/impact
mkdir -p "$WORK"

SB_PID=
stop_all() {
  if [ -n "$SB_PID" ]; then kill "$SB_PID" 2>/dev/null || true; wait "$SB_PID" 2>/dev/null || true; fi
  sandbox_stop
}
trap stop_all EXIT

# sysbench writes, so the run works on a copy of the shared dataset cache
# (built if needed, then shut down cleanly so that the copy is consistent),
# never on the cache itself.
DATA=$(dataset_dir "$SIZE_MB")
dataset_start "$DATA" "$SIZE_MB" "$TABLES"
sandbox_stop
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')
dataset_copy "$DATA" "$WORK/src"
sandbox_start "$WORK/src"
# Every setting starts from the same state: the datadir in the page cache.
find "$WORK/src/data" -type f -exec cat {} + >/dev/null

# window LOG FROM TO: "TPS p95 seconds" over the report lines of LOG whose
# second's middle lies in [FROM, TO) (seconds since sysbench started), plus
# the second holding the middle of the range.
window() {
  awk -v from="$2" -v to="$3" '
    /^\[ [0-9]+s \]/ {
      s = substr($2, 1, length($2) - 1) + 0
      mid = (from + to) / 2
      if (!((s - 0.5 >= from && s - 0.5 < to) || (s - 1 <= mid && mid < s))) next
      tps = ""; lat = ""
      for (i = 1; i < NF; i++) {
        if ($i == "tps:") tps = $(i + 1)
        if ($i == "(ms,95%):") lat = $(i + 1)
      }
      if (tps == "" || lat == "") next
      n++; sum += tps; weighted += tps * lat
    }
    END {
      if (n == 0 || sum == 0) { print "0 0 0"; exit }
      printf "%.1f %.2f %d\n", sum / n, weighted / sum, n
    }' "$1"
}

SOCK=$SANDBOX_SOCKET
SB=(sysbench oltp_read_write --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root
  --tables="$TABLES" --table-size="$(dataset_rows "$SIZE_MB" "$TABLES")" --threads="$THREADS" --report-interval=1)
IFS=';' read -r -a settings <<<"$SETTINGS"
declare -a lines
for i in "${!settings[@]}"; do
  setting=${settings[$i]}
  opts=()
  [ "$setting" = unlimited ] || read -r -a opts <<<"$setting"
  echo "setting $((i + 1)) of ${#settings[@]}: $setting" >&2
  rm -rf "$WORK/repo"
  "$BS" init --repo "$WORK/repo" >/dev/null
  log=$WORK/sysbench-$((i + 1)).log
  started=$(now)
  "${SB[@]}" --time=$((WARMUP + DURATION + 86400)) run >"$log" 2>&1 &
  SB_PID=$!
  sleep $((WARMUP + DURATION))
  kill -0 "$SB_PID" 2>/dev/null || { echo "sysbench stopped before the backup:" >&2; tail -20 "$log" >&2; exit 1; }
  t0=$(now)
  timeout "$TIMEOUT" "$BS" backup --repo "$WORK/repo" --parallel "$N" "${opts[@]}" --no-defaults --socket "$SOCK" \
    --user root --progress none --json >"$WORK/backup-$((i + 1)).json" 2>"$WORK/backup-$((i + 1)).log" ||
    { echo "failed (or over ${TIMEOUT} s): backup $setting" >&2; tail -20 "$WORK/backup-$((i + 1)).log" >&2; exit 1; }
  t1=$(now)
  sleep 2   # sysbench reports the second the backup ended in
  kill -0 "$SB_PID" 2>/dev/null || { echo "sysbench stopped during the backup:" >&2; tail -20 "$log" >&2; exit 1; }
  kill "$SB_PID"; wait "$SB_PID" 2>/dev/null || true; SB_PID=
  "$BS" verify latest --repo "$WORK/repo" --progress none >"$WORK/verify-$((i + 1)).log" 2>&1 ||
    { echo "failed: verify after $setting" >&2; tail -20 "$WORK/verify-$((i + 1)).log" >&2; exit 1; }

  a0=$(echo "$t0 - $started" | bc -l); a1=$(echo "$t1 - $started" | bc -l)
  read -r tps0 p0 n0 < <(window "$log" "$(echo "$a0 - $DURATION" | bc -l)" "$a0")
  read -r tps1 p1 n1 < <(window "$log" "$a0" "$a1")
  if [ "$n0" -eq 0 ] || [ "$n1" -eq 0 ] || [ "$(echo "$tps0 == 0" | bc)" = 1 ]; then
    echo "setting $setting: no sysbench reports in a window (baseline $n0 s, backup $n1 s); see $log" >&2
    exit 1
  fi
  secs=$(echo "$t1 - $t0" | bc -l | xargs printf '%.1f')
  raw=$("$BS" list --repo "$WORK/repo" --json | jq -r '.[0].raw_bytes')
  mibs=$(echo "$raw / 1048576 / ($t1 - $t0)" | bc -l | xargs printf '%.0f')
  p1ratio=n/a
  [ "$(echo "$p0 == 0" | bc)" = 1 ] || p1ratio=$(ratio "$p1" "$p0")x
  # What the backup itself reports of its cost (its --json impact).
  reported=$(jq -r '.impact | "\(.commits_blocked_seconds * 1000 | round) ms, \(.ddl_blocked_seconds * 1000 | round) ms, \((.probe_median_seconds // 0) * 1000 * 10 | round / 10) / \((.probe_max_seconds // 0) * 1000 | round) ms"' "$WORK/backup-$((i + 1)).json")
  lines+=("$(row "${setting//|/\\|}" "$secs" "$mibs" "$tps0" "$tps1 ($(ratio "$tps1" "$tps0")x)" "$p0" "$p1 ($p1ratio)" "$reported")")
  rm -rf "$WORK/repo"
done
sandbox_stop
rm -rf "$WORK/src"

echo
echo "dataset: sysbench, $TABLES tables, datadir $(human "$datadir_size") (binlogs excluded); sysbench oltp_read_write, $THREADS threads;"
echo "backup --parallel $N into a local repository on the same disk; $(nproc) cores; baseline: the ${DURATION} s before each backup"
echo
row "setting" "backup s" "read MiB/s" "TPS before" "TPS during (ratio)" "p95 ms before" "p95 ms during (ratio)" "reported: commits, DDL blocked; SELECT 1 median / max"
row "---" "---:" "---:" "---:" "---:" "---:" "---:" "---:"
printf '%s\n' "${lines[@]}"

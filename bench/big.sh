#!/usr/bin/env bash
# Big data: a physical backup of a SIZE_GB server into a local and a MinIO
# repository and its restores, against mariabackup | zstd -1 -T$N and
# zstd -dc | mbstream -x, with backstream's throughput and RSS every 10 s.
#
#   bench/big.sh                  # 50 GB, N=2 (about an hour and a half here)
#   SIZE_GB=5 bench/big.sh        # a quick run of the same steps
#
# The dataset: one sysbench table of TABLE_MB (1000) loaded once, then
# cloned as tablespaces (CREATE TABLE ... LIKE, DISCARD TABLESPACE, a copy
# of the first table's exported .ibd and .cfg, IMPORT TABLESPACE) until
# the tables hold SIZE_GB. Every table holds the same rows, each
# compressed on its own: the compression ratio is sysbench's.
#
# The disk holds the source, one compressed copy and one restore at a
# time, never more: about 1.45x SIZE_GB at the peak (the script checks
# the free space first). So the source is deleted before the first
# restore, and the first restore, prepared and checked against the
# source's CHECKSUM TABLE, is the source of the MinIO round:
#   1. build; CHECKSUM TABLE of every table (the reference)
#   2. mariabackup | zstd into a file (timed; the file then deleted; again
#      in step 5, of the restored server, and the faster run compared)
#   3. backstream backup into a local repository
#   4. the source deleted; backstream restore (durable) from it; prepared,
#      started, checked; the local repository deleted
#   5. backstream backup of the restored server into MinIO; that server
#      deleted; backstream restore (durable) from MinIO; prepared,
#      started, checked
#   6. the peer's compressed stream made from the MinIO backup
#      (backstream cat | zstd -1: the same xbstream as mariabackup's),
#      MinIO deleted; zstd -dc | mbstream -x, then sync (timed)
# Every step starts with the page cache dropped (as root) and reads and
# writes the disk: at this size nothing stays cached.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-50}
TABLE_MB=${TABLE_MB:-1000}
N=${N:-2}
./scripts/deps.sh sysbench bc zstd jq >/dev/null

WORK=$BENCH_OUT/big
BS=$BENCH_OUT/backstream
go build -o "$BS" ./cmd/backstream
go build -o "$BENCH_OUT/pitrload" ./bench/pitrload
rm -rf "$WORK"; mkdir -p "$WORK"
need_kb=$(( SIZE_GB * 1000 * 1000 * 145 / 100 ))
have_kb=$(df -k --output=avail "$WORK" | tail -1)
if (( have_kb < need_kb )); then
  echo "big.sh: $SIZE_GB GB needs about $(( need_kb / 1000000 )) GB free on $(df --output=target "$WORK" | tail -1), which has $(( have_kb / 1000000 )) GB" >&2
  exit 1
fi
trap 'sandbox_stop; if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi' EXIT
SQL=(mariadb --no-defaults -uroot)
declare -A T R

# measure KEY COMMAND...: wall seconds in T[KEY], peak RSS (MiB) of the
# biggest process in R[KEY]; fails, naming the command, when it does.
measure() {
  local key=$1 tf; shift
  tf=$(mktemp)
  cold
  if ! /usr/bin/time -f '%e %M' -o "$tf" "$@" >/dev/null 2>"$WORK/$key.err"; then
    tail -5 "$WORK/$key.err" >&2
    echo "failed: $*" >&2
    return 1
  fi
  read -r T[$key] rss <"$tf"
  R[$key]=$(( rss / 1024 ))
  rm -f "$tf"
}

# timeline KEY BACKSTREAM-ARGS...: measure of a backstream command with
# JSON progress every 10 s (in $WORK/KEY.json) and its RSS sampled every
# 10 s (in $WORK/KEY.rss: epoch seconds and KiB).
timeline() {
  local key=$1; shift
  (
    while :; do
      pid=$(pgrep -n -f "^$BS $1 ") && rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) &&
        echo "$(date +%s.%N) $rss"
      sleep 10
    done
  ) >"$WORK/$key.rss" & local sampler=$!
  local status=0
  measure "$key" "$BS" "$@" --progress json --progress-interval 10s || status=$?
  kill "$sampler"; wait "$sampler" 2>/dev/null || true
  cp "$WORK/$key.err" "$WORK/$key.json"
  return "$status"
}

# checksums SOCKET: CHECKSUM TABLE of every sbtest table.
checksums() { sbtest_checksums "$1" "$TABLES"; }
# check NAME SOCKET: the server must hold the source's rows.
check() {
  local got; got=$(checksums "$2" 2>&1) || true
  if [ "$got" != "$SRC_SUMS" ]; then
    echo "$1: the restored sbtest tables differ from the source (CHECKSUM TABLE, source < > restored):" >&2
    diff <(echo "$SRC_SUMS") <(echo "$got") >&2 || true
    exit 1
  fi
  echo "$1: all $TABLES tables equal the source's (CHECKSUM TABLE)" >&2
}

# 1. The dataset, built with the redo log not flushed at each commit (the
# build is not what is measured), then restarted as configured.
start=$(now)
sandbox_start "$WORK/src" --innodb-flush-log-at-trx-commit=0
rows=$(dataset_rows "$TABLE_MB" 1)
echo "building: one table of $rows rows" >&2
"${SQL[@]}" --socket="$SANDBOX_SOCKET" -e 'CREATE DATABASE sbtest'
sysbench oltp_read_write --db-driver=mysql --mysql-socket="$SANDBOX_SOCKET" --mysql-user=root \
  --tables=1 --table-size="$rows" --threads=1 prepare >/dev/null
one=$(stat -c %s "$WORK/src/data/sbtest/sbtest1.ibd")
TABLES=$(( (SIZE_GB * 1000 * 1000 * 1000 + one - 1) / one ))
echo "building: $TABLES tables of $(human "$one"), cloned as tablespaces" >&2
{
  for t in $(seq 2 "$TABLES"); do
    echo "CREATE TABLE sbtest.sbtest$t LIKE sbtest.sbtest1; ALTER TABLE sbtest.sbtest$t DISCARD TABLESPACE;"
  done
  echo "FLUSH TABLES sbtest.sbtest1 FOR EXPORT;"
  for t in $(seq 2 "$TABLES"); do
    for ext in ibd cfg; do
      echo "system cp $WORK/src/data/sbtest/sbtest1.$ext $WORK/src/data/sbtest/sbtest$t.$ext"
    done
  done
  echo "UNLOCK TABLES;"
  for t in $(seq 2 "$TABLES"); do
    echo "ALTER TABLE sbtest.sbtest$t IMPORT TABLESPACE;"
  done
} | "${SQL[@]}" --socket="$SANDBOX_SOCKET"
rm -f "$WORK"/src/data/sbtest/*.cfg
"${SQL[@]}" --socket="$SANDBOX_SOCKET" -e 'RESET MASTER'
sandbox_stop
sandbox_start "$WORK/src"
datadir_size=$(size_of "$WORK/src/data" --exclude='mariadb-bin*' --exclude='ib_logfile*')
echo "built $TABLES tables, datadir $(human "$datadir_size"), in $(elapsed "$start") s; checksumming" >&2
SRC_SUMS=$(sbtest_source_checksums "$SANDBOX_SOCKET" "$TABLES" source)
CONN=(--no-defaults --socket "$SANDBOX_SOCKET" --user root)

# 2. The peer's backup (KEY DATADIR), its file then deleted.
peer_backup() {
  echo "mariabackup | zstd" >&2
  mkdir -p "$WORK/mbtmp"
  measure "$1" bash -o pipefail -c 'mariabackup --no-defaults --user=root --socket="$2" --datadir="$3" --backup \
    --stream=xbstream --parallel='"$N"' --target-dir="$1/mbtmp" 2>"$1/mb.log" | zstd -1 -q -T'"$N"' >"$1/peer.zst" && sync' _ "$WORK" "$SANDBOX_SOCKET" "$2"
  mb_size=$(size_of "$WORK/peer.zst")
  rm -rf "$WORK/peer.zst" "$WORK/mbtmp"
}
peer_backup mb_backup1 "$WORK/src/data"

# 3. backstream into a local repository.
echo "backstream backup (local)" >&2
"$BS" init --repo "$WORK/repo" >/dev/null
timeline bs_backup backup --repo "$WORK/repo" --parallel "$N" "${CONN[@]}"
bs_size=$(size_of "$WORK/repo")

# 4. The source gone; the restore from the local repository.
sandbox_stop
rm -rf "$WORK/src"
echo "backstream restore (local)" >&2
mkdir -p "$WORK/t"
timeline bs_restore restore latest --repo "$WORK/repo" --target-dir "$WORK/t/data" --parallel "$N"
rm -rf "$WORK/repo"
mariabackup --prepare --target-dir="$WORK/t/data" >"$WORK/prepare.log" 2>&1
sandbox_start "$WORK/t"
check "restore from the local repository" "$SANDBOX_SOCKET"
CONN=(--no-defaults --socket "$SANDBOX_SOCKET" --user root)

# 5. The peer's backup again, of this server (the best of its two runs is
# the one compared); then backstream into MinIO and back. (A subshell:
# the credentials stay in it.)
peer_backup mb_backup2 "$WORK/t/data"
T[mb_backup]=$(printf '%s\n' "${T[mb_backup1]}" "${T[mb_backup2]}" | sort -g | head -1)
./scripts/minio.sh start "$WORK/minio" >/dev/null
(
  source "$WORK/minio/minio.env"
  export AWS_REGION=us-east-1
  "$BENCH_OUT/pitrload" mkbucket big
  "$BS" init --repo s3://big/repo >/dev/null
  echo "backstream backup (MinIO)" >&2
  timeline s3_backup backup --repo s3://big/repo --parallel "$N" "${CONN[@]}"
  sandbox_stop
  rm -rf "$WORK/t"
  echo "backstream restore (MinIO)" >&2
  mkdir -p "$WORK/t2"
  timeline s3_restore restore latest --repo s3://big/repo --target-dir "$WORK/t2/data" --parallel "$N"
  mariabackup --prepare --target-dir="$WORK/t2/data" >"$WORK/prepare2.log" 2>&1
  sandbox_start "$WORK/t2"
  check "restore from MinIO" "$SANDBOX_SOCKET"
  sandbox_stop
  rm -rf "$WORK/t2"
  # 6. The peer's compressed stream, from the stored backup.
  "$BS" cat latest --repo s3://big/repo --progress none | zstd -1 -q -T"$N" >"$WORK/peer.zst"
  for key in s3_backup s3_restore; do echo "$key ${T[$key]} ${R[$key]}"; done >"$WORK/s3.results"
)
SANDBOX_PID=   # stopped in the subshell
while read -r key t r; do T[$key]=$t R[$key]=$r; done <"$WORK/s3.results"
s3_size=$(size_of "$WORK/minio/data")
./scripts/minio.sh stop "$WORK/minio"
rm -rf "$WORK/minio"
echo "zstd -dc | mbstream -x" >&2
mkdir -p "$WORK/t3"
measure mb_restore bash -o pipefail -c 'zstd -dc -q -T'"$N"' "$1/peer.zst" | mbstream -x -p '"$N"' -C "$1/t3" && sync' _ "$WORK"
rm -rf "$WORK/t3" "$WORK/peer.zst"

echo
echo "dataset: $TABLES sysbench tables of $(human "$one") (one loaded, the rest cloned as tablespaces), datadir $(human "$datadir_size") without the redo log and binary logs; N=$N; $(nproc) cores; $(( $(awk '/^MemTotal/ { print $2 }' /proc/meminfo) / 1024 / 1024 )) GiB of memory; page cache dropped before each step; restores durable (synced)"
echo
echo "mariabackup | zstd -1 -T$N: ${T[mb_backup1]} s of the source, ${T[mb_backup2]} s of the restored server; the faster is compared"
echo
row "step" "backstream s" "MiB/s" "RSS MiB" "stored" "peer" "peer s" "peer MiB/s" "peer stored" "backstream / peer"
row "---" "---:" "---:" "---:" "---:" "---" "---:" "---:" "---:" "---:"
mibs() { echo "$datadir_size / 1048576 / $1" | bc -l | xargs printf '%.0f'; }
line() { # line STEP KEY STORED PEER PEERKEY PEERSTORED
  row "$1" "${T[$2]}" "$(mibs "${T[$2]}")" "${R[$2]}" "$3" "$4" "${T[$5]}" "$(mibs "${T[$5]}")" "$6" "$(ratio "${T[$2]}" "${T[$5]}")x"
}
line "backup, local repository" bs_backup "$(human "$bs_size")" "mariabackup \| zstd -1 -T$N" mb_backup "$(human "$mb_size")"
line "backup, MinIO" s3_backup "$(human "$s3_size")" "mariabackup \| zstd -1 -T$N" mb_backup "$(human "$mb_size")"
line "restore, local repository" bs_restore "" "zstd -dc \| mbstream -x -p $N; sync" mb_restore ""
line "restore, MinIO" s3_restore "" "zstd -dc \| mbstream -x -p $N; sync" mb_restore ""

# Every 10 s of each backstream step: the datadir's bytes it had done (a
# backup's bytes in, a restore's bytes out), the rate over those 10 s,
# its stage, and its RSS at the nearest sample.
for key in bs_backup bs_restore s3_backup s3_restore; do
  echo
  echo "$key, every 10 s:"
  side=bytes_in
  [[ $key != *restore ]] || side=bytes_out
  python3 - "$WORK/$key.json" "$WORK/$key.rss" "$side" <<'EOF'
import json, re, sys
from datetime import datetime
def epoch(s):
    s = re.sub(r'(\.\d{6})\d*', r'\1', s).replace('Z', '+00:00')
    return datetime.fromisoformat(s).timestamp()
events = []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get('event') == 'progress':
        events.append((epoch(e['time']), e.get(sys.argv[3], 0), e.get('stage', '')))
rss = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if len(l.split()) == 2]
if not events:
    sys.exit('no progress events in ' + sys.argv[1])
t0, prev = events[0][0], None
rates = []
print('    %6s  %10s  %8s  %7s  %s' % ('s', 'MiB', 'MiB/s', 'RSS MiB', 'stage'))
for t, b, stage in events:
    rate = '' if prev is None or t - prev[0] < 1 else '%.0f' % ((b - prev[1]) / 1048576 / (t - prev[0]))
    if rate and stage == prev[2]:
        rates.append(float(rate))
    near = min(rss, key=lambda r: abs(r[0] - t)) if rss else None
    print('    %6.0f  %10.0f  %8s  %7s  %s' % (t - t0, b / 1048576, rate, '%.0f' % (near[1] / 1024) if near else '', stage))
    prev = (t, b, stage)
if rates:
    r = sorted(rates)
    print('    rate over 10 s: min %.0f, median %.0f, max %.0f MiB/s' % (r[0], r[len(r) // 2], r[-1]))
if rss:
    m = [x[1] / 1024 for x in rss]
    print('    RSS: min %.0f, max %.0f MiB over %d samples' % (min(m), max(m), len(m)))
EOF
done

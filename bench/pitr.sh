#!/usr/bin/env bash
# Point-in-time recovery: the recovery point of continuous archiving
# (binlog --follow) when the source dies, and the speed of replaying
# archived binary logs into a new datadir (restore --until end
# --target-dir) and onto a running server (--apply-to) against the stock
# pipeline, mariadb-binlog | mariadb.
#
#   bench/pitr.sh                           # 100, 1000, 5000 tps, local and MinIO, 20 s each; 50,000 transactions replayed
#   RATES="100 1000" BACKENDS=local KILLS=both DURATION=30 bench/pitr.sh
#   REPLAY_TXNS=100000 ROWS_PER_TXN=4 ROUNDS=3 bench/pitr.sh
#   PARTS=replay REPLAY_RATES="1000 5000" bench/pitr.sh     # the replay table only
#   SMOKE=1 bench/pitr.sh                   # one rate, local only, small replay: about a minute
#
# Recovery point, per rate and repository: a fresh source (m.counter, id
# BIGINT PRIMARY KEY), a physical backup, binlog --follow --flush-interval
# 1s, then bench/pitrload writes autocommit inserts at the rate from 16
# connections, recording each id with the moment its commit returned, and
# sends SIGKILL at a random moment of the second half of DURATION: to the
# source (KILLS=source: binlog --follow sees it go, stores what it has and
# is stopped 2 s later with Ctrl-C), or to binlog --follow and then the
# source (KILLS=both: the archiving host is lost too, so only what the
# flush interval stored counts). The source's datadir is deleted, and
# restore --until end restores the backup and replays everything archived. A server on the result is counted:
# transactions lost are acknowledged commits missing, seconds lost run from
# the first missing commit to the kill. The rate reached is reported: on a
# small machine the writer (and the server's fsync per commit group) may
# not reach the rate asked.
#
# Replay speed, per rate in REPLAY_RATES: a source with m.sbtest
# (sysbench's table shape), a physical backup, FLUSH BINARY LOGS, then
# REPLAY_TXNS transactions of ROWS_PER_TXN single-row inserts from 16
# connections, started at the rate (the rate reached is reported: at a
# rate, fewer transactions commit together than flat out, which is what
# a parallel applier feeds on), FLUSH BINARY LOGS, binlog archives the
# file. Then, ROUNDS times, each going first in turn:
#   parallel  restore --until end --target-dir (the replaying server's
#             parallel applier), and
#   serial    the same with --serial-replay (mariadb-binlog | mariadb),
#             each less
#   base      restore --prepare of the base backup alone (the rest of
#             their time);
#   pipeline  the stock way: mariadb-binlog of the file piped into mariadb,
#             onto a server started on a copy of the restored base;
#   apply     restore --until end --apply-to onto such a server (after SET
#             GLOBAL gtid_slave_pos to the backup's GTID, as the guide says).
# Every server replayed onto runs without a binary log, as backstream's
# replaying server does, and must end with the source's CHECKSUM TABLE.
# Events are those the archived file's manifest counts (every event,
# format description and GTID list included). PARTS=replay skips the
# recovery point.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
RATES=${RATES:-100 1000 5000}
KILLS=${KILLS:-source both}
BACKENDS=${BACKENDS:-local minio}
DURATION=${DURATION:-20}
REPLAY_TXNS=${REPLAY_TXNS:-50000}
REPLAY_RATES=${REPLAY_RATES:-1000 5000}
PARTS=${PARTS:-rpo replay}
ROWS_PER_TXN=${ROWS_PER_TXN:-4}
ROUNDS=${ROUNDS:-3}
if [ -n "${SMOKE:-}" ]; then
  RATES=1000 BACKENDS=local KILLS=source DURATION=6 REPLAY_TXNS=2000 REPLAY_RATES=1000 ROUNDS=1
fi
./scripts/deps.sh bc jq >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
go build -o "$BENCH_OUT/pitrload" ./bench/pitrload
BS=$BENCH_OUT/backstream
LOAD=$BENCH_OUT/pitrload
WORK=$BENCH_OUT/pitr
BUCKET=bench

# Two servers may run at once: a source, and a restored datadir being
# counted. sandbox_start/stop track the latter; the source's pid is kept
# here, as is binlog --follow's.
SRC_PID= FOLLOW_PID=
stop_source() { SANDBOX_PID=$SRC_PID sandbox_stop; SRC_PID=; }
cleanup() {
  if [ -n "$FOLLOW_PID" ]; then kill "$FOLLOW_PID" 2>/dev/null || true; wait "$FOLLOW_PID" 2>/dev/null || true; fi
  sandbox_stop
  stop_source
  if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi
}
trap cleanup EXIT
if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi
rm -rf "$WORK"
mkdir -p "$WORK"

# One freshly installed datadir, copied for every source.
sandbox_start "$WORK/pristine"
sandbox_stop

sql() { mariadb --no-defaults --socket="$1" -uroot -N -B -e "$2"; }

source_start() { # source_start DIR: a server on a copy of the pristine datadir; sets SRC and SRC_PID
  dataset_copy "$WORK/pristine" "$1"
  sandbox_start "$1"
  SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID SANDBOX_PID=
}

if [[ " $PARTS " == *" rpo "* && " $BACKENDS " == *" minio "* ]]; then
  # The env file holds the credentials and the endpoint: sourced, never printed.
  ./scripts/minio.sh start "$WORK/minio" >/dev/null   # installs MinIO if missing
  source "$WORK/minio/minio.env"
  "$LOAD" mkbucket "$BUCKET"
fi

repo_of() { # repo_of BACKEND RATE: a fresh repository's URL
  case $1 in
    local) echo "$WORK/repo-$2" ;;
    minio) echo "s3://$BUCKET/rpo-$2" ;;
  esac
}

declare -a RPO_ROWS
rpo() { # rpo BACKEND RATE KILL: one cell of the recovery point table
  local backend=$1 rate=$2 kill=$3 repo out line reached commits lost secs restore_s victims
  repo=$(repo_of "$backend" "$rate-$kill")
  echo "recovery point: $backend, $rate tps, $kill killed" >&2
  source_start "$WORK/src"
  sql "$SRC" "CREATE DATABASE m; CREATE TABLE m.counter (id BIGINT PRIMARY KEY, at DATETIME(6))"
  "$BS" init --repo "$repo" >/dev/null
  "$BS" backup --repo "$repo" --no-defaults --socket "$SRC" --user root --progress none >/dev/null
  "$BS" binlog --repo "$repo" --follow --flush-interval 1s --no-defaults --socket "$SRC" --user root \
    --progress none >/dev/null 2>"$WORK/follow.log" &
  FOLLOW_PID=$!
  sleep 1
  victims=$SRC_PID
  [ "$kill" = source ] || victims=$FOLLOW_PID,$SRC_PID
  "$LOAD" write --socket "$SRC" --rate "$rate" --duration "${DURATION}s" --kill "$victims" --out "$WORK/commits"
  wait "$SRC_PID" 2>/dev/null || true
  SRC_PID=
  rm -rf "$WORK/src"
  sleep 2
  if [ "$kill" = source ]; then
    kill -INT "$FOLLOW_PID"
    if ! wait "$FOLLOW_PID"; then
      echo "binlog --follow failed:" >&2; cat "$WORK/follow.log" >&2; exit 1
    fi
  else
    wait "$FOLLOW_PID" 2>/dev/null || true
  fi
  FOLLOW_PID=
  rm -rf "$WORK/restored"
  restore_s=$(timed "$BS" restore --repo "$repo" --until end --target-dir "$WORK/restored/data" --progress none)
  BUFFER_POOL=256M sandbox_start "$WORK/restored"
  out=$("$LOAD" loss --socket "$SANDBOX_SOCKET" --commits "$WORK/commits")
  sandbox_stop
  read -r reached commits lost secs <<<"$out"
  line=$(row "$backend" "$kill" "$rate" "$reached" "$commits" "$lost" "$secs" "$restore_s")
  RPO_ROWS+=("$line")
  echo "$line" >&2
}

if [[ " $PARTS " == *" rpo "* ]]; then
  for backend in $BACKENDS; do
    for kill in $KILLS; do
      for rate in $RATES; do
        rpo "$backend" "$rate" "$kill"
      done
    done
  done
fi

# Replay speed, per rate of the archived load.
declare -A T
declare -a REPLAY_ROWS
replay_rate() { # replay_rate RATE: fills, archives, and times every replay of it
  local rate=$1 rrepo=$WORK/replay-$1 file events gtid binlog_size sums reached bs pipe par ser base
  echo "replay: $REPLAY_TXNS transactions of $ROWS_PER_TXN inserts at $rate a second" >&2
  source_start "$WORK/rsrc"
  sql "$SRC" "CREATE DATABASE m; CREATE TABLE m.sbtest (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))"
  "$BS" init --repo "$rrepo" >/dev/null
  "$BS" backup --repo "$rrepo" --no-defaults --socket "$SRC" --user root --progress none >/dev/null
  sql "$SRC" "FLUSH BINARY LOGS"
  file=$(sql "$SRC" "SHOW MASTER STATUS" | cut -f1)
  "$LOAD" fill --socket "$SRC" --txns "$REPLAY_TXNS" --rows-per-txn "$ROWS_PER_TXN" --workers 16 --rate "$rate" 2>"$WORK/fill.log"
  cat "$WORK/fill.log" >&2
  reached=$(sed -n 's/.*(\([0-9]*\) a second).*/\1/p' "$WORK/fill.log")
  sql "$SRC" "FLUSH BINARY LOGS"
  "$BS" binlog --repo "$rrepo" --no-defaults --socket "$SRC" --user root --progress none >/dev/null
  sums=$(sql "$SRC" "CHECKSUM TABLE m.sbtest")
  cp "$WORK/rsrc/data/$file" "$WORK/replay.binlog"
  stop_source
  rm -rf "$WORK/rsrc"
  events=$("$BS" list --repo "$rrepo" --binlogs --json | jq -r --arg f "$file" '.[] | select(.name == $f) | .events')
  gtid=$("$BS" list --repo "$rrepo" --json | jq -r '.[0].positions.gtid')
  binlog_size=$(size_of "$WORK/replay.binlog")
  rm -rf "$WORK/base"
  "$BS" restore latest --repo "$rrepo" --target-dir "$WORK/base/data" --prepare --progress none >/dev/null
  T=()
  check() { # check KIND: the server on $WORK/target must hold the source's rows
    local got
    got=$(sql "$SANDBOX_SOCKET" "CHECKSUM TABLE m.sbtest")
    sandbox_stop
    if [ "$got" != "$sums" ]; then
      echo "replay $1 at $rate tps: CHECKSUM TABLE $got, the source had $sums" >&2
      exit 1
    fi
  }
  one() { # one KIND: one replay, timed under KIND
    rm -rf "$WORK/target"
    case $1 in
      parallel|serial)
        local flag=; [ "$1" = serial ] && flag=--serial-replay
        run "$1" "$BS" restore --repo "$rrepo" --until end --target-dir "$WORK/target/data" $flag --progress none
        BUFFER_POOL=512M sandbox_start "$WORK/target" --skip-log-bin ;;
      base)
        run "$1" "$BS" restore latest --repo "$rrepo" --target-dir "$WORK/target/data" --prepare --progress none
        return ;;
      apply)
        dataset_copy "$WORK/base" "$WORK/target"
        BUFFER_POOL=512M sandbox_start "$WORK/target" --skip-log-bin
        sql "$SANDBOX_SOCKET" "SET GLOBAL gtid_slave_pos = '$gtid'"
        run "$1" "$BS" restore --repo "$rrepo" --until end --apply-to --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none ;;
      pipeline)
        dataset_copy "$WORK/base" "$WORK/target"
        BUFFER_POOL=512M sandbox_start "$WORK/target" --skip-log-bin
        run "$1" bash -o pipefail -c 'mariadb-binlog --no-defaults "$1" | mariadb --no-defaults --socket="$2" -uroot' _ \
          "$WORK/replay.binlog" "$SANDBOX_SOCKET" ;;
    esac
    check "$1"
  }
  local kinds=(parallel pipeline serial base apply)
  for round in $(seq 1 "$ROUNDS"); do
    for i in "${!kinds[@]}"; do one "${kinds[(i + round - 1) % ${#kinds[@]}]}"; done   # each goes first in turn
  done
  par=$(best parallel) ser=$(best serial) base=$(best base) pipe=$(best pipeline) bs=$(best apply)
  local par_r ser_r
  par_r=$(echo "$par - $base" | bc -l | xargs printf '%.2f')
  ser_r=$(echo "$ser - $base" | bc -l | xargs printf '%.2f')
  REPLAY_ROWS+=("$(row "$rate" "$reached" "$events" "$(human "$binlog_size")" "$pipe" "$bs" "$ser_r" "$par_r" "$(ratio "$pipe" "$par_r")")")
  echo "${REPLAY_ROWS[-1]}" >&2
  echo "every run at $rate tps (s): parallel${T[parallel]}; serial${T[serial]}; base${T[base]}; pipeline${T[pipeline]}; apply${T[apply]}" | tee -a "$WORK/replay-runs.txt" >&2
}
if [[ " $PARTS " == *" replay "* ]]; then
  for rate in $REPLAY_RATES; do replay_rate "$rate"; done
fi

echo
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; MariaDB $(mariadbd --version | awk '{print $3}'); binlog --follow --flush-interval 1s; sources commit with innodb_flush_log_at_trx_commit=1"
if [[ " $PARTS " == *" rpo "* ]]; then
  echo
  echo "Recovery point (SIGKILL to the source, or to binlog --follow and the source; DURATION=${DURATION}s of writes):"
  echo
  row repository killed "tps asked" "tps reached" commits "transactions lost" "seconds lost" "restore --until end (s)"
  row --- --- --- --- --- --- --- ---
  printf '%s\n' "${RPO_ROWS[@]}"
fi
if [[ " $PARTS " == *" replay "* ]]; then
  echo
  echo "Replay: $REPLAY_TXNS transactions of $ROWS_PER_TXN single-row inserts from 16 connections at the rate asked, one binary log; best of $ROUNDS, seconds of replay"
  echo "(restore --until end --target-dir less restore --prepare of its base alone; the pipeline and --apply-to onto a server on that base):"
  echo
  row "tps asked" "tps reached" events size "mariadb-binlog \| mariadb" "backstream --apply-to" "backstream --target-dir --serial-replay" "backstream --target-dir (parallel)" "parallel speed / pipeline"
  row --- --- --- --- --- --- --- --- ---
  printf '%s\n' "${REPLAY_ROWS[@]}"
  echo
  cat "$WORK/replay-runs.txt"
fi

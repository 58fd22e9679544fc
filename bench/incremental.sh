#!/usr/bin/env bash
# Incremental physical backups: what an incremental costs next to a full
# backup, and what restoring a chain costs next to restoring one full backup
# of the same state, on one sysbench dataset, with the same N, in one run.
#
#   bench/incremental.sh                    # about 1 GB of sysbench data, N=2, 3 rounds
#   SIZE_GB=4 N=4 ROUNDS=5 bench/incremental.sh
#   CHANGE_WHERE='id <= 10417' bench/incremental.sh   # 1% of SIZE_GB=1's rows, clustered
#
# Each round works on a fresh copy of the shared dataset cache (the rows are
# changed in the copy, never in the cache), into an empty repository:
#   a full backup; three times: UPDATE sbtest.sbtestN SET k = k + 1 WHERE
#   $CHANGE_WHERE on every table (1% of the rows, spread evenly, by default),
#   then an incremental on the newest backup; a full backup of that final
#   state; then restore --prepare of the chain (full + 3 incrementals) and of
#   that last full backup, each into an empty directory; then merge of the
#   chain into one full backup, and restore --prepare of that.
# One row in 100 is few rows but many pages: a page holds about 65 sysbench
# rows, and the index on k changes too. CHANGE_WHERE shows the other end.
# The source writes changed pages out at once (no dirty-page allowance, a high
# I/O capacity), and every backup waits until it has no dirty page and no
# purge left: each incremental then holds exactly the pages changed since the
# one before, whatever the page cleaner's timing.
# Every link is checked to build on the one before it (an incremental that
# fell back to a full backup must not look cheap), and each restored datadir
# is started and must give the source's CHECKSUM TABLE, or the script stops.
# The table shows the best of the rounds (a shared VM's noise only ever adds
# time) and the median; sizes are the median; every run is printed below it.
# Times are wall clock. A restore is timed to a prepared datadir on disk
# (restore syncs what it wrote before it says done; the page cache is
# synced before each restore starts): for the chain, every link's
# extraction and one mariabackup --prepare per link, each link prepared as
# soon as it and the links before it are written. Both restores also run
# with --no-sync (done once the page cache holds everything), which is
# what they measured before restores were durable: there mariabackup's
# delta apply still fsyncs the base's tablespaces for the chain, while the
# full's prepare touches few files.
# The floor for the chain is what its bytes alone cost: every link decoded
# and its files written and synced, all links at once, with no prepare
# (backstream cat of each link into mbstream -x, in parallel, then sync); a
# chain restore can be no faster than that plus the last link's prepare.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
N=${N:-2}
TABLES=${TABLES:-4}
ROUNDS=${ROUNDS:-3}
CHANGE_WHERE=${CHANGE_WHERE:-id % 100 = 0}
LINKS=3
./scripts/deps.sh sysbench bc jq >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/incremental
DATA=$(dataset_dir $((SIZE_GB * 1000)))
mkdir -p "$WORK"

# Two servers run at once: the round's source, and a restored datadir being
# checked. sandbox_start/stop track the latter; the source's pid is kept here.
SRC_PID=
stop_source() { SANDBOX_PID=$SRC_PID sandbox_stop; SRC_PID=; }
stop_all() { sandbox_stop; stop_source; }
trap stop_all EXIT

# The cache is built if needed, then shut down cleanly, so that what the
# rounds copy is a consistent datadir.
dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
sandbox_stop
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')

source_start() { # a server on a fresh copy of the cache; sets SRC and SRC_PID
  dataset_copy "$DATA" "$WORK/src"
  sandbox_start "$WORK/src" --innodb-io-capacity=100000 --innodb-io-capacity-max=100000 \
    --innodb-max-dirty-pages-pct=0 --innodb-max-dirty-pages-pct-lwm=0
  SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID SANDBOX_PID=
  # Every backup reads the datadir from the page cache.
  find "$WORK/src/data" -type f -exec cat {} + >/dev/null
}

change_rows() { # change_rows: the UPDATE on every table; prints the rows it changed
  local sql=
  for t in $(seq 1 "$TABLES"); do
    sql+="UPDATE sbtest.sbtest$t SET k = k + 1 WHERE $CHANGE_WHERE; SELECT ROW_COUNT();"
  done
  mariadb --no-defaults --socket="$SRC" -uroot -N -B -e "$sql" | awk '{s += $1} END {print s + 0}'
}

declare -A T S R
take() { # take KEY PARENT [backup flags...]: times a backup under KEY, which must build on PARENT (- for a full one); sets ID
  settle "$SRC"
  run "$1" "$BS" backup --repo "$WORK/repo" --parallel "$N" --no-defaults --socket "$SRC" --user root \
    --progress none "${@:3}"
  local info parent stored raw
  info=$("$BS" list --repo "$WORK/repo" --json |
    jq -r 'sort_by(.started) | last | "\(.id) \(.parent // "-") \(.stored_bytes) \(.raw_bytes)"')
  read -r ID parent stored raw <<<"$info"
  if [ "$parent" != "$2" ]; then
    echo "$1: backup $ID builds on $parent, not on $2 as it should" >&2
    exit 1
  fi
  S[$1]="${S[$1]:-} $stored" R[$1]="${R[$1]:-} $raw"
}

extract() { # extract ID...: writes every named backup's files into a directory of its own, all at once, then syncs them
  local dir=$WORK/extract pids=() id
  rm -rf "$dir"
  for id in "$@"; do
    mkdir -p "$dir/$id"
    "$BS" cat "$id" --repo "$WORK/repo" | mbstream -x -C "$dir/$id" & pids+=($!)
  done
  for id in "${pids[@]}"; do wait "$id"; done
  find "$dir" -type f -exec sync {} +
}

restore() { # restore KEY ID [FLAGS...]: times restore --prepare of backup ID under KEY, then checks the datadir
  local dir=$WORK/restore-$1 got
  rm -rf "$dir"; mkdir -p "$dir"
  # What an earlier step left dirty in the page cache is not this
  # restore's to write.
  sync
  run "$1" "$BS" restore "$2" --repo "$WORK/repo" --target-dir "$dir/data" --parallel "$N" --prepare \
    --progress none "${@:3}"
  if ! BUFFER_POOL=256M sandbox_start "$dir"; then
    echo "$1: no server starts on the datadir restored from backup $2 ($dir/data)" >&2
    exit 1
  fi
  got=$(sbtest_checksums "$SANDBOX_SOCKET" "$TABLES" 2>&1) || true
  sandbox_stop
  if [ "$got" != "$SUMS" ]; then
    echo "$1: the datadir restored from backup $2 differs from the source (CHECKSUM TABLE, source < > restored):" >&2
    diff <(echo "$SUMS") <(echo "$got") >&2 || true
    exit 1
  fi
  rm -rf "$dir"
}

keys=(full)
for i in $(seq 1 "$LINKS"); do keys+=("inc$i"); done
keys+=(final_full extract_chain restore_chain restore_full restore_chain_nosync restore_full_nosync merge restore_merged)

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2
  source_start
  if [ "$round" = 1 ]; then
    total_rows=$(mariadb --no-defaults --socket="$SRC" -uroot -N -B \
      -e "SELECT $(seq -f '(SELECT COUNT(*) FROM sbtest.sbtest%g)' -s+ 1 "$TABLES")")
  fi
  rm -rf "$WORK/repo"
  "$BS" init --repo "$WORK/repo" >/dev/null
  take full -
  links=("$ID")
  for i in $(seq 1 "$LINKS"); do
    changed=$(change_rows)
    if [ "$changed" -eq 0 ]; then
      echo "UPDATE ... WHERE $CHANGE_WHERE changed no rows: an incremental of nothing measures nothing" >&2
      exit 1
    fi
    take "inc$i" "$ID" --incremental
    links+=("$ID")
  done
  chain=$ID
  SUMS=$(sbtest_source_checksums "$SRC" "$TABLES" "$WORK/src")
  take final_full -
  full=$ID
  # The restores run with no server beside them.
  stop_source
  run extract_chain extract "${links[@]}"
  rm -rf "$WORK/extract"
  restore restore_chain "$chain"
  restore restore_full "$full"
  restore restore_chain_nosync "$chain" --no-sync
  restore restore_full_nosync "$full" --no-sync
  run merge "$BS" merge "$chain" --repo "$WORK/repo" --parallel "$N" --work-dir "$WORK" --progress none
  merged=$("$BS" list --repo "$WORK/repo" --json | jq -r '[.[] | select(.merged_from)] | last | .id')
  restore restore_merged "$merged"
  rm -rf "$WORK/repo" "$WORK/src"
done

declare -A B M
for k in "${keys[@]}"; do
  B[$k]=$(best "$k"); M[$k]=$(median ${T[$k]})
done

echo
echo "dataset: sysbench, $TABLES tables, $total_rows rows, datadir $(human "$datadir_size") (binlogs excluded); N=$N; $(nproc) cores; best (median) of $ROUNDS rounds"
echo "before each incremental: UPDATE ... SET k = k + 1 WHERE $CHANGE_WHERE on every table: $changed rows ($(echo "100 * $changed / $total_rows" | bc -l | xargs printf '%.2f')%)"
echo
row "backup" "time s" "stored" "raw" "time vs full" "stored vs full"
row "---" "---:" "---:" "---:" "---:" "---:"
line() { # line NAME KEY
  local stored raw
  stored=$(median ${S[$2]}) raw=$(median ${R[$2]})
  row "$1" "${B[$2]} (${M[$2]})" "$(human "$stored")" "$(human "$raw")" \
    "$(ratio "${B[$2]}" "${B[full]}")x" "$(ratio "$stored" "$(median ${S[full]})")x"
}
line "full" full
for i in $(seq 1 "$LINKS"); do line "incremental $i (on the previous)" "inc$i"; done
line "full of the final state" final_full
echo
row "restore --prepare" "time s" "time vs full"
row "---" "---:" "---:"
row "chain: full + $LINKS incrementals" "${B[restore_chain]} (${M[restore_chain]})" \
  "$(ratio "${B[restore_chain]}" "${B[restore_full]}")x"
row "full of the same state" "${B[restore_full]} (${M[restore_full]})" "1.00x"
row "chain, --no-sync (done when the page cache holds it)" "${B[restore_chain_nosync]} (${M[restore_chain_nosync]})" \
  "$(ratio "${B[restore_chain_nosync]}" "${B[restore_full_nosync]}")x of the full --no-sync"
row "full, --no-sync" "${B[restore_full_nosync]} (${M[restore_full_nosync]})" "1.00x"
row "the chain merged into one full (merge)" "${B[restore_merged]} (${M[restore_merged]})" \
  "$(ratio "${B[restore_merged]}" "${B[restore_full]}")x"
echo
echo "merge of the chain (restore, prepare, store): ${B[merge]} (${M[merge]}) s"
echo "floor: the chain's links extracted at once and synced, no prepare: ${B[extract_chain]} (${M[extract_chain]}) s; chain restore / floor: $(ratio "${B[restore_chain]}" "${B[extract_chain]}")x"
echo
echo "all runs (s): $(for k in "${keys[@]}"; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
echo "stored (bytes): $(for k in "${keys[@]}"; do [ -z "${S[$k]:-}" ] || printf '%s:%s; ' "$k" "${S[$k]}"; done)"

#!/usr/bin/env bash
# Issue #33's first-night target: a full backup into an empty
# deduplicating repository against a plain full of the same server. A
# single run says more of the disk's writeback than of the two (one 10 GB
# run was 1.25x where alternating rounds measured 1.09x), so each round
# takes both, each into a fresh repository, in an order that alternates
# round by round (plain first, then deduplicated first); the medians and
# ranges of the wall seconds and of the CPU seconds (user and system, of
# backstream and its mariabackup) are printed with the ratio. OTHER set
# to other builds of backstream (paths, space-separated) adds each one's
# deduplicated backup to every round (an A/B of a change, the order
# reversed likewise). RESTORE=1 also times, right after each backup, its
# restore --prepare into an empty directory from a cold page cache (the
# restore of a deduplicated night 1, the oldest of a repository, against
# a plain full's), with medians and ranges likewise. COLD=1 drops the
# page cache before each backup, so that mariabackup reads the source
# datadir from the disk, as it does on a production server (InnoDB reads
# its pages past the page cache); RESTORE=1 leaves most backups so too.
#
#   bench/night1.sh                           # the 1 GB dataset, 5 rounds
#   SIZE_GB=10 ROUNDS=6 bench/night1.sh
#   OTHER=/tmp/before/backstream SIZE_GB=10 bench/night1.sh
#   RESTORE=1 SIZE_GB=10 bench/night1.sh
#   COLD=1 SIZE_GB=10 ROUNDS=8 bench/night1.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
TABLES=${TABLES:-4}
ROUNDS=${ROUNDS:-5}
OTHER=${OTHER:-}
RESTORE=${RESTORE:-}
COLD=${COLD:-}
./scripts/deps.sh sysbench bc jq time >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/night1
DATA=$(dataset_dir $((SIZE_GB * 1000)))
mkdir -p "$WORK"
cleanup() {
  sandbox_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"

declare -A WALL CPU BIN RWALL
kinds=(plain dedup)
n=0
for other in $OTHER; do
  n=$((n + 1)) kinds+=(other$n) BIN[other$n]=$other
  echo "other$n: $other" >&2
done

night1() { # night1 KIND: a full backup into a fresh repository of that kind, timed
  local bin=${BIN[$1]:-$BS} repo=$WORK/repo-$1 init=(--dedup)
  [ "$1" = plain ] && init=()
  rm -rf "$repo"
  "$bin" init --repo "$repo" "${init[@]}" >/dev/null
  settle "$SANDBOX_SOCKET"
  sync
  [ -z "$COLD" ] || cold
  /usr/bin/time -f '%e %U %S' -o "$WORK/time" \
    "$bin" backup --repo "$repo" --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none >/dev/null ||
    { echo "the $1 backup failed" >&2; exit 1; }
  read -r wall user sys <"$WORK/time"
  WALL[$1]+=" $wall"
  CPU[$1]+=" $(echo "$user + $sys" | bc -l)"
  if [ -n "$RESTORE" ]; then
    rm -rf "$WORK/restore"
    cold
    /usr/bin/time -f '%e' -o "$WORK/time" \
      "$bin" restore latest --repo "$repo" --target-dir "$WORK/restore" --prepare --progress none >/dev/null ||
      { echo "the $1 restore failed" >&2; exit 1; }
    RWALL[$1]+=" $(cat "$WORK/time")"
    rm -rf "$WORK/restore"
  fi
  rm -rf "$repo"
}

for round in $(seq 1 "$ROUNDS"); do
  order=("${kinds[@]}")
  (( round % 2 == 0 )) && order=($(printf '%s\n' "${kinds[@]}" | tac))
  for kind in "${order[@]}"; do night1 "$kind"; done
  echo "round $round: $(for k in "${kinds[@]}"; do printf '%s %ss ' "$k" "$(echo ${WALL[$k]} | awk '{print $NF}')"; [ -n "$RESTORE" ] && printf '(restore %ss) ' "$(echo ${RWALL[$k]} | awk '{print $NF}')"; done)" >&2
done

range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "-" hi}'; }
plain=$(median ${WALL[plain]})
echo
echo "Night 1, $SIZE_GB GB ($TABLES sysbench tables), $ROUNDS rounds alternating, $(nproc) cores${COLD:+, each backup from a cold page cache}:"
echo
row kind "wall s, median (range)" "/ plain" "CPU s, median (range)"
row --- --- --- ---
for k in "${kinds[@]}"; do
  m=$(median ${WALL[$k]})
  row "$k" "$m ($(range ${WALL[$k]}))" "$(ratio "$m" "$plain")x" "$(median ${CPU[$k]}) ($(range ${CPU[$k]}))"
done
if [ -n "$RESTORE" ]; then
  rplain=$(median ${RWALL[plain]})
  echo
  echo "Each backup's restore --prepare, cold page cache:"
  echo
  row kind "restore s, median (range)" "/ plain"
  row --- --- ---
  for k in "${kinds[@]}"; do
    m=$(median ${RWALL[$k]})
    row "$k" "$m ($(range ${RWALL[$k]}))" "$(ratio "$m" "$rplain")x"
  done
fi

#!/usr/bin/env bash
# Issue #33, first measurement: what seven nightly physical backups store
# as seven plain fulls, as one full and six incrementals, and what a
# block-level deduplicating repository would store for the seven fulls,
# per block size, when 1% of the rows change each night, clustered or
# spread. Storage only: the deduplicating repository is not built yet, so
# bench/dedupsim counts what it would store (the blocks no earlier night
# had, compressed block by block with zstd level 1) from each full backup
# as `backstream cat` gives it.
#
#   bench/dedup.sh                              # about 1 GB of sysbench data, both kinds of change
#   SIZE_GB=4 CHANGE=clustered BLOCKS=16K,64K bench/dedup.sh
#
# Each kind of change works on a fresh copy of the shared dataset cache,
# into an empty repository. Night 1 is a full backup; every later night
# first changes 1% of the rows (UPDATE ... SET k = k + 1):
#   clustered  one contiguous id range of one table (the table and the
#              range move each night), as an application whose new and
#              hot rows are together;
#   spread     id % 100 = night on every table: every page of the tables
#              holds about 65 rows, so most pages change.
# then takes an incremental on the newest backup (the night before's full:
# it holds exactly that night's changes, what a chain would store) and a
# full backup, which dedupsim reads. Like bench/incremental.sh, the source
# writes changed pages out at once and each backup waits until no page is
# dirty and nothing is left to purge.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
TABLES=${TABLES:-4}
NIGHTS=${NIGHTS:-7}
CHANGE=${CHANGE:-clustered spread}
BLOCKS=${BLOCKS:-16K,64K,256K,1M}
./scripts/deps.sh sysbench bc jq >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
go build -o "$BENCH_OUT/dedupsim" ./bench/dedupsim
BS=$BENCH_OUT/backstream
SIM=$BENCH_OUT/dedupsim
WORK=$BENCH_OUT/dedup
DATA=$(dataset_dir $((SIZE_GB * 1000)))
mkdir -p "$WORK"
trap sandbox_stop EXIT

dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
sandbox_stop
rows=$(cut -d' ' -f2 "$DATA/dataset.ok")

change() { # change KIND NIGHT: 1% of the rows
  local kind=$1 night=$2 sql= t lo n
  n=$(( rows * TABLES / 100 ))
  case $kind in
    clustered)
      t=$(( (night - 2) % TABLES + 1 ))
      lo=$(( ((night - 2) * 7919 * 100) % (rows - n) + 1 ))
      sql="UPDATE sbtest.sbtest$t SET k = k + 1 WHERE id BETWEEN $lo AND $((lo + n - 1))" ;;
    spread)
      for t in $(seq 1 "$TABLES"); do sql+="UPDATE sbtest.sbtest$t SET k = k + 1 WHERE id % 100 = $night;"; done ;;
  esac
  mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e "$sql"
}

backup() { # backup REPO [flags]: prints "id parent stored raw" of the backup made
  settle "$SANDBOX_SOCKET"
  "$BS" backup --repo "$1" --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none "${@:2}" >/dev/null
  "$BS" list --repo "$1" --json | jq -r 'sort_by(.started) | last | "\(.id) \(.parent // "-") \(.stored_bytes) \(.raw_bytes)"'
}

declare -a OUT
for kind in $CHANGE; do
  echo "dedup: $kind change, $NIGHTS nights" >&2
  dataset_copy "$DATA" "$WORK/src"
  sandbox_start "$WORK/src" --innodb-io-capacity=100000 --innodb-io-capacity-max=100000 \
    --innodb-max-dirty-pages-pct=0 --innodb-max-dirty-pages-pct-lwm=0
  repo=$WORK/repo-$kind state=$WORK/state-$kind
  rm -rf "$repo" "$state"
  "$BS" init --repo "$repo" >/dev/null
  full_total=0 chain_total=0 prev=
  declare -A SIM_TOTAL=()
  OUT+=("" "$kind change, 1% of $((rows * TABLES)) rows a night (bytes stored; dedup: new blocks, zstd -1 each):" "")
  header=(night "full" "incremental")
  for b in ${BLOCKS//,/ }; do header+=("dedup $b"); done
  OUT+=("$(row "${header[@]}")" "$(row $(printf -- '--- %.0s' "${header[@]}"))")
  for night in $(seq 1 "$NIGHTS"); do
    inc=-
    if (( night > 1 )); then
      change "$kind" "$night"
      read -r id parent inc _ <<<"$(backup "$repo" --incremental)"
      [ "$parent" = "$prev" ] || { echo "night $night: the incremental builds on $parent, not $prev" >&2; exit 1; }
      chain_total=$(( chain_total + inc ))
    fi
    read -r id parent full _ <<<"$(backup "$repo")"
    [ "$parent" = - ] || { echo "night $night: the full backup $id has parent $parent" >&2; exit 1; }
    (( night == 1 )) && chain_total=$full first_full=$full
    full_total=$(( full_total + full )) prev=$id
    cells=("$night" "$(human "$full")" "$( [ "$inc" = - ] && echo - || human "$inc")")
    while IFS=$'\t' read -r _ size _ _ _ _ newz _; do
      SIM_TOTAL[$size]=$(( ${SIM_TOTAL[$size]:-0} + newz ))
      cells+=("$(human "$newz")")
    done < <("$BS" cat "$id" --repo "$repo" | "$SIM" --state "$state" --blocks "$BLOCKS" --label "$kind-$night")
    OUT+=("$(row "${cells[@]}")")
    echo "${OUT[-1]}" >&2
  done
  cells=("all $NIGHTS" "$(human "$full_total")" "$(human "$chain_total") (with night 1's full)")
  ratios=("all / night 1's full" "$(ratio "$full_total" "$first_full")x" "$(ratio "$chain_total" "$first_full")x")
  for size in $(printf '%s\n' "${!SIM_TOTAL[@]}" | sort -n); do
    cells+=("$(human "${SIM_TOTAL[$size]}")")
    ratios+=("$(ratio "${SIM_TOTAL[$size]}" "$first_full")x")
  done
  OUT+=("$(row "${cells[@]}")" "$(row "${ratios[@]}")")
  sandbox_stop
  rm -rf "$WORK/src"
done
echo
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; MariaDB $(mariadbd --version | awk '{print $3}'); sysbench $TABLES tables x $rows rows"
printf '%s\n' "${OUT[@]}"

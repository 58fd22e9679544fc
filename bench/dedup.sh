#!/usr/bin/env bash
# Issue #33: seven nightly physical backups as seven plain fulls, as one
# full and six incrementals, and as seven fulls into a deduplicating
# repository (init --dedup), when 1% of the rows change each night,
# clustered or spread: bytes stored, each night's backup time, the
# restore of the newest and of the oldest, and expire's time. With
# BLOCKS set, bench/dedupsim also counts what blocks of those sizes would
# store (the measurement the design was chosen by).
#
#   bench/dedup.sh                              # about 1 GB of sysbench data, both kinds of change
#   SIZE_GB=4 CHANGE=clustered bench/dedup.sh
#   BLOCKS=16K,64K,256K,1M bench/dedup.sh       # and the simulation per block size
#   S3=1 bench/dedup.sh                         # and each night into a deduplicating repository on MinIO, counting requests
#   OTHER=/tmp/before/backstream SIZE_GB=10 CHANGE=clustered RESTORES=6 bench/dedup.sh
#
# Each kind of change works on a fresh copy of the shared dataset cache,
# into empty repositories. Night 1 is a full backup into each; every later
# night first changes 1% of the rows (UPDATE ... SET k = k + 1):
#   clustered  one contiguous id range of one table (the table and the
#              range move each night), as an application whose new and
#              hot rows are together;
#   spread     id % 100 = night on every table: every page of the tables
#              holds about 65 rows, so most pages change.
# then takes an incremental into a chain repository (on the night
# before's backup there: night 1 is a full, so the chain grows to one
# full and six incrementals), a plain full, and a full into the
# deduplicating repository, all three timed. Like bench/incremental.sh, the source
# writes changed pages out at once and each backup waits until no page is
# dirty and nothing is left to purge. After the seventh night: restore
# --prepare of the newest plain full, and of the newest and the oldest
# deduplicated backups, each checked against the source's CHECKSUM TABLE
# of its night, and of the chain's newest incremental (a restore of
# seven links, each applied in turn), RESTORES rounds of those four
# (default 3, each from a cold page cache, in one order and then the
# reverse, round by round: a restore just before leaves the disk busy
# writing back; the contents checked in the first round; the median, and
# the range; the chain's restores, which write 11.6 GB each at 10 GB,
# after all the others, so that their writeback falls on none of the
# restores compared), then expire
# --keep-last 1 of the deduplicating repository,
# timed, and what it holds after. OTHER set to other builds of
# backstream (paths, space-separated) adds each one's restore of the
# newest deduplicated backup to every round (an A/B of a change to the
# restore, in the same alternating order). KEEP=1 leaves each kind's
# repositories in bench/out/dedup after the expire (the newest of each
# stays), and the deduplicating one also as the last night left it, in
# dedup-<kind>-before-expire (hard links: expire replaces objects, it
# never writes into one), for measurements after the run. With S3=1 each night's full also goes
# into a deduplicating repository in a MinIO bucket on this machine, with
# --metrics-file: the object-store requests it sent (PUT, POST, LIST; GET,
# HEAD) are a column.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
TABLES=${TABLES:-4}
NIGHTS=${NIGHTS:-7}
CHANGE=${CHANGE:-clustered spread}
BLOCKS=${BLOCKS:-}
S3=${S3:-}
RESTORES=${RESTORES:-3}
OTHER=${OTHER:-}
KEEP=${KEEP:-}
./scripts/deps.sh sysbench bc jq >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
go build -o "$BENCH_OUT/dedupsim" ./bench/dedupsim
BS=$BENCH_OUT/backstream
SIM=$BENCH_OUT/dedupsim
WORK=$BENCH_OUT/dedup
DATA=$(dataset_dir $((SIZE_GB * 1000)))
mkdir -p "$WORK"
cleanup() {
  sandbox_stop
  if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi
}
trap cleanup EXIT
if [ -n "$S3" ]; then
  rm -rf "$WORK/minio"   # a run before left its bucket: every run starts empty
  ./scripts/minio.sh start "$WORK/minio" >/dev/null   # installs MinIO if missing
  # The env file holds the credentials and the endpoint: sourced, never printed.
  source "$WORK/minio/minio.env"
  export AWS_REGION=us-east-1
  go build -o "$BENCH_OUT/pitrload" ./bench/pitrload
  "$BENCH_OUT/pitrload" mkbucket dedup
fi

# s3requests FILE: "writes/reads" the metrics file says the run sent.
s3requests() {
  local w r
  w=$(awk '$1 ~ "^backstream_last_run_s3_write_requests" { printf "%.0f", $2 }' "$1")
  r=$(awk '$1 ~ "^backstream_last_run_s3_read_requests" { printf "%.0f", $2 }' "$1")
  echo "$w/$r"
}

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

declare -A T
backup() { # backup REPO [flags]: prints "id parent stored raw seconds" of the backup made
  local secs
  settle "$SANDBOX_SOCKET"
  secs=$(timed "$BS" backup --repo "$1" --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none "${@:2}")
  echo "$("$BS" list --repo "$1" --json | jq -r 'sort_by(.started) | last | "\(.id) \(.parent // "-") \(.stored_bytes) \(.raw_bytes)"') $secs"
}

declare -A BIN
others=()
n=0
for other in $OTHER; do
  n=$((n + 1)) others+=(other$n) BIN[other$n]=$other
  echo "other$n: $other" >&2
done

restored() { # restored REPO ID [SUMS [BINARY]]: times restore --prepare of ID from a cold page cache, checks it against SUMS if given; prints the seconds
  local dir=$WORK/restore secs got
  rm -rf "$dir"; mkdir -p "$dir"
  cold
  secs=$(timed "${4:-$BS}" restore "$2" --repo "$1" --target-dir "$dir/data" --prepare --progress none)
  if [ -z "${3:-}" ]; then rm -rf "$dir"; echo "$secs"; return; fi
  BUFFER_POOL=256M sandbox_start "$dir" --skip-log-bin >/dev/null
  got=$(sbtest_checksums "$SANDBOX_SOCKET" "$TABLES")
  SANDBOX_PID=$SANDBOX_PID sandbox_stop
  if [ "$got" != "$3" ]; then
    echo "backup $2 of $1, restored, differs from the source at its night" >&2
    exit 1
  fi
  rm -rf "$dir"
  echo "$secs"
}

declare -a OUT
declare -A M span
for kind in $CHANGE; do
  echo "dedup: $kind change, $NIGHTS nights" >&2
  dataset_copy "$DATA" "$WORK/src"
  sandbox_start "$WORK/src" --innodb-io-capacity=100000 --innodb-io-capacity-max=100000 \
    --innodb-max-dirty-pages-pct=0 --innodb-max-dirty-pages-pct-lwm=0
  SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID
  repo=$WORK/repo-$kind drepo=$WORK/dedup-$kind state=$WORK/state-$kind crepo=$WORK/chain-$kind
  rm -rf "$repo" "$drepo" "$state" "$crepo"
  "$BS" init --repo "$repo" >/dev/null
  "$BS" init --repo "$crepo" >/dev/null
  "$BS" init --repo "$drepo" --dedup >/dev/null
  s3repo=s3://dedup/$kind
  [ -n "$S3" ] && "$BS" init --repo "$s3repo" --dedup >/dev/null
  full_total=0 chain_total=0 dedup_total=0 prev= first_dedup= last_dedup= last_full=
  declare -A SIM_TOTAL=() SUMS=()
  OUT+=("" "$kind change, 1% of $((rows * TABLES)) rows a night (bytes stored, seconds):" "")
  header=(night "full" "full s" "incremental" "incremental s" "dedup full" "dedup s" "dedup s / full s")
  [ -n "$S3" ] && header+=("MinIO dedup s" "MinIO requests (write/read)")
  [ -n "$BLOCKS" ] && for b in ${BLOCKS//,/ }; do header+=("dedupsim $b"); done
  OUT+=("$(row "${header[@]}")" "$(row $(printf -- '--- %.0s' "${header[@]}"))")
  for night in $(seq 1 "$NIGHTS"); do
    inc=- inc_s=-
    SANDBOX_SOCKET=$SRC
    if (( night > 1 )); then
      change "$kind" "$night"
      read -r cid parent inc _ inc_s <<<"$(backup "$crepo" --incremental)"
      [ "$parent" = "$prev" ] || { echo "night $night: the incremental builds on $parent, not $prev" >&2; exit 1; }
      chain_total=$(( chain_total + inc ))
    else
      read -r cid _ chain_total _ _ <<<"$(backup "$crepo")"
    fi
    prev=$cid
    read -r id parent full _ full_s <<<"$(backup "$repo")"
    [ "$parent" = - ] || { echo "night $night: the full backup $id has parent $parent" >&2; exit 1; }
    # Only the newest plain full is restored: the older ones go (their
    # sizes are counted), so that 7 nights of a large dataset fit the disk.
    "$BS" expire --repo "$repo" --keep-last 1 --confirm >/dev/null
    read -r did _ dstored _ dedup_s <<<"$(backup "$drepo")"
    SUMS[$did]=$(sbtest_checksums "$SRC" "$TABLES")
    (( night == 1 )) && first_full=$full first_dedup=$did
    full_total=$(( full_total + full )) dedup_total=$(( dedup_total + dstored )) last_dedup=$did last_full=$id
    T[full]="${T[full]:-} $full_s" T[dedup]="${T[dedup]:-} $dedup_s"
    cells=("$night" "$(human "$full")" "$full_s" "$( [ "$inc" = - ] && echo - || human "$inc")" "$inc_s" "$(human "$dstored")" "$dedup_s" "$(ratio "$dedup_s" "$full_s")")
    if [ -n "$S3" ]; then
      read -r _ _ _ _ s3_s <<<"$(backup "$s3repo" --metrics-file "$WORK/s3-$kind-$night.prom")"
      cells+=("$s3_s" "$(s3requests "$WORK/s3-$kind-$night.prom")")
    fi
    if [ -n "$BLOCKS" ]; then
      while IFS=$'\t' read -r _ size _ _ _ _ newz _; do
        SIM_TOTAL[$size]=$(( ${SIM_TOTAL[$size]:-0} + newz ))
        cells+=("$(human "$newz")")
      done < <("$BS" cat "$id" --repo "$repo" | "$SIM" --state "$state" --blocks "$BLOCKS" --label "$kind-$night")
    fi
    OUT+=("$(row "${cells[@]}")")
    echo "${OUT[-1]}" >&2
  done
  cells=("all $NIGHTS" "$(human "$full_total")" "" "$(human "$chain_total") (with night 1's full)" "" "$(human "$dedup_total")" "" "")
  ratios=("all / night 1's full" "$(ratio "$full_total" "$first_full")x" "" "$(ratio "$chain_total" "$first_full")x" "" "$(ratio "$dedup_total" "$first_full")x" "" "")
  for size in $(printf '%s\n' "${!SIM_TOTAL[@]}" | sort -n); do
    cells+=("$(human "${SIM_TOTAL[$size]}")")
    ratios+=("$(ratio "${SIM_TOTAL[$size]}" "$first_full")x")
  done
  OUT+=("$(row "${cells[@]}")" "$(row "${ratios[@]}")")
  lastsums=$(sbtest_checksums "$SRC" "$TABLES")
  SANDBOX_PID=$SRC_PID sandbox_stop
  declare -A RT=()
  for round in $(seq 1 "$RESTORES"); do
    last= newest= oldest=   # the contents are checked in the first round
    (( round == 1 )) && last=$lastsums newest=${SUMS[$last_dedup]} oldest=${SUMS[$first_dedup]}
    order=(full newest "${others[@]}" oldest)
    (( round % 2 == 0 )) && order=(oldest "${others[@]}" newest full)
    for k in "${order[@]}"; do
      case $k in
      other*) RT[$k]+=" $(restored "$drepo" "$last_dedup" "$newest" "${BIN[$k]}")" ;;
      full) RT[full]+=" $(restored "$repo" "$last_full" "$last")" ;;
      newest) RT[newest]+=" $(restored "$drepo" "$last_dedup" "$newest")" ;;
      oldest) RT[oldest]+=" $(restored "$drepo" "$first_dedup" "$oldest")" ;;
      esac
    done
  done
  for round in $(seq 1 "$RESTORES"); do
    last=
    (( round == 1 )) && last=$lastsums
    RT[chain]+=" $(restored "$crepo" "$prev" "$last")"
  done
  for k in full chain newest "${others[@]}" oldest; do
    M[$k]=$(median ${RT[$k]})
    span[$k]="$(printf '%s\n' ${RT[$k]} | sort -g | head -1)-$(printf '%s\n' ${RT[$k]} | sort -g | tail -1)"
  done
  rf=${M[full]} rc=${M[chain]} rn=${M[newest]} ro=${M[oldest]}
  before=$(size_of "$drepo")
  if [ -n "$KEEP" ]; then rm -rf "$drepo-before-expire"; cp -al "$drepo" "$drepo-before-expire"; fi
  ex=$(timed "$BS" expire --repo "$drepo" --keep-last 1 --confirm)
  OUT+=("" "restore --prepare, cold page cache, median of $RESTORES (range) (s): newest plain full $rf (${span[full]}); newest incremental, a chain of $NIGHTS, $rc (${span[chain]}, $(ratio "$rc" "$rf")x); newest deduplicated $rn (${span[newest]}, $(ratio "$rn" "$rf")x); oldest deduplicated $ro (${span[oldest]}, $(ratio "$ro" "$rf")x)")
  echo "${OUT[-1]}" >&2
  for k in "${others[@]}"; do
    OUT+=("newest deduplicated, restored by ${BIN[$k]}: ${M[$k]} (${span[$k]}, $(ratio "${M[$k]}" "$rf")x; $(ratio "${M[$k]}" "$rn")x this build's)")
    echo "${OUT[-1]}" >&2
  done
  OUT+=("expire --keep-last 1 of the deduplicating repository: $ex s, $(human "$before") before, $(human "$(size_of "$drepo")") after")
  echo "${OUT[-1]}" >&2
  # The next kind of change needs the room (at 10 GB, each kind's
  # repositories hold tens of GB), unless KEEP asks for them.
  rm -rf "$WORK/src" "$state"
  [ -n "$KEEP" ] || rm -rf "$repo" "$crepo" "$drepo" "$drepo-before-expire"
done
echo
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; MariaDB $(mariadbd --version | awk '{print $3}'); sysbench $TABLES tables x $rows rows"
printf '%s\n' "${OUT[@]}"

#!/usr/bin/env bash
# Physical backup and restore: backstream against the pipelines DBAs build by
# hand, with the same parallelism N, on one sysbench dataset, in one run.
#
#   bench/physical.sh                       # about 1 GB of sysbench data, N=2, 5 rounds
#   SIZE_GB=4 N=4 ROUNDS=3 bench/physical.sh
#
# Each round runs every pipeline once, in turn. The table shows the best of
# the rounds (a shared VM's noise only ever adds time) and the median; every
# run is printed below it.
# Times are wall clock. Restore is measured to an extracted, not yet prepared
# datadir (prepare is the same mariabackup --prepare for everyone), in the
# page cache: backstream restores with --no-sync, as mbstream -x writes
# (a durable restore adds the disk's write time for everyone alike).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
N=${N:-2}
TABLES=${TABLES:-4}
ROUNDS=${ROUNDS:-5}
./scripts/deps.sh pigz sysbench bc >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/physical
DATA=$(dataset_dir $((SIZE_GB * 1000)))
mkdir -p "$WORK"
trap 'sandbox_stop' EXIT

dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')
# Everyone reads the datadir from the page cache.
find "$DATA/data" -type f -exec cat {} + >/dev/null
MB=(mariabackup --no-defaults --user=root --socket="$SANDBOX_SOCKET" --datadir="$DATA/data" \
  --backup --stream=xbstream --parallel="$N" --target-dir="$WORK/mbtmp")

fresh() { rm -rf "$1"; mkdir -p "$1"; }
declare -A T B M

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2
  fresh "$WORK/repo"; rmdir "$WORK/repo"; fresh "$WORK/mbtmp"
  "$BS" init --repo "$WORK/repo" >/dev/null
  run bs_backup "$BS" backup --repo "$WORK/repo" --parallel "$N" --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none
  bs_size=$(size_of "$WORK/repo/backups")
  rm -rf "$WORK/restore"
  run bs_restore "$BS" restore latest --repo "$WORK/repo" --target-dir "$WORK/restore" --parallel "$N" --progress none --no-sync
  rm -rf "$WORK/repo" "$WORK/restore"

  fresh "$WORK/mbtmp"
  run pigz_backup bash -o pipefail -c '"$@" 2>"'"$WORK"'/pigz.log" | pigz --fast -p '"$N"' > "'"$WORK"'/backup.gz"' _ "${MB[@]}"
  pigz_size=$(size_of "$WORK/backup.gz")
  fresh "$WORK/restore"
  run pigz_restore bash -o pipefail -c 'pigz -dc -p '"$N"' "'"$WORK"'/backup.gz" | mbstream -x -p '"$N"' -C "'"$WORK"'/restore"'
  rm -rf "$WORK/backup.gz" "$WORK/restore"

  fresh "$WORK/mbtmp"
  run zstd_backup bash -o pipefail -c '"$@" 2>"'"$WORK"'/zstd.log" | zstd -1 -q -T'"$N"' > "'"$WORK"'/backup.zst"' _ "${MB[@]}"
  zstd_size=$(size_of "$WORK/backup.zst")
  fresh "$WORK/restore"
  run zstd_restore bash -o pipefail -c 'zstd -dc -q -T'"$N"' "'"$WORK"'/backup.zst" | mbstream -x -p '"$N"' -C "'"$WORK"'/restore"'
  rm -rf "$WORK/backup.zst" "$WORK/restore"
done

for k in bs_backup bs_restore pigz_backup pigz_restore zstd_backup zstd_restore; do
  B[$k]=$(best "$k"); M[$k]=$(median ${T[$k]})
done

echo
echo "dataset: sysbench, $TABLES tables, datadir $(human "$datadir_size") (binlogs excluded); N=$N; $(nproc) cores; best (median) of $ROUNDS rounds"
echo
row "pipeline" "backup s" "restore s" "output" "backup time vs backstream" "restore time vs backstream"
row "---" "---:" "---:" "---:" "---:" "---:"
line() { # line NAME KEY SIZE
  row "$1" "${B[${2}_backup]} (${M[${2}_backup]})" "${B[${2}_restore]} (${M[${2}_restore]})" "$(human "$3")" \
    "$(ratio "${B[${2}_backup]}" "${B[bs_backup]}")x" "$(ratio "${B[${2}_restore]}" "${B[bs_restore]}")x"
}
line "backstream (zstd:1)" bs "$bs_size"
line "mariabackup \| pigz --fast -p $N" pigz "$pigz_size"
line "mariabackup \| zstd -1 -T$N" zstd "$zstd_size"
echo
echo "all runs (s): $(for k in bs_backup bs_restore pigz_backup pigz_restore zstd_backup zstd_restore; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
echo "backstream / pigz pipeline: backup $(ratio "${B[bs_backup]}" "${B[pigz_backup]}")x, restore $(ratio "${B[bs_restore]}" "${B[pigz_restore]}")x (targets <= 0.4x, <= 0.2x)"
echo "backstream / zstd pipeline: backup $(ratio "${B[bs_backup]}" "${B[zstd_backup]}")x, restore $(ratio "${B[bs_restore]}" "${B[zstd_restore]}")x, size $(ratio "$bs_size" "$zstd_size")x (targets <= 0.9x, <= 0.85x, <= 1.0x)"

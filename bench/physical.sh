#!/usr/bin/env bash
# Physical backup and restore: backstream against the pipelines DBAs build by
# hand, with the same parallelism N, on one sysbench dataset, in one run.
#
#   bench/physical.sh                 # about 1 GB of sysbench data, N=2
#   SIZE_GB=4 N=4 bench/physical.sh
#
# Times are wall clock. Restore is measured to an extracted, not yet prepared
# datadir (prepare is the same mariabackup --prepare for everyone).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
N=${N:-2}
TABLES=${TABLES:-4}
./scripts/deps.sh pigz sysbench bc >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/physical
DATA=$BENCH_OUT/dataset-${SIZE_GB}g
mkdir -p "$WORK"
trap 'sandbox_stop' EXIT

rows=$(( SIZE_GB * 1000000 / TABLES * 1000 / 240 ))   # ~240 bytes per sysbench row on disk
sandbox_start "$DATA"
if ! mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'SELECT 1 FROM sbtest.sbtest1 LIMIT 1' >/dev/null 2>&1; then
  echo "building the sysbench dataset: $TABLES tables x $rows rows"
  mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'CREATE DATABASE sbtest'
  sysbench oltp_read_write --db-driver=mysql --mysql-socket="$SANDBOX_SOCKET" --mysql-user=root \
    --tables="$TABLES" --table-size="$rows" --threads=2 prepare >/dev/null
  # The load's binary logs are not part of a physical backup; drop them.
  mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'RESET MASTER'
fi
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')
MB=(mariabackup --no-defaults --user=root --socket="$SANDBOX_SOCKET" --datadir="$DATA/data" \
  --backup --stream=xbstream --parallel="$N" --target-dir="$WORK/mbtmp")

fresh() { rm -rf "$1"; mkdir -p "$1"; }
sync_drop() { sync; echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

results=()
measure() { # measure NAME COMMAND...; sets T
  local start; start=$(now)
  "$@"
  T=$(elapsed "$start")
}

# backstream
fresh "$WORK/repo"; fresh "$WORK/mbtmp"
measure "$BS" backup --repo "$WORK/repo" --parallel "$N" --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none >/dev/null
bs_backup=$T; bs_size=$(size_of "$WORK/repo/backups")
fresh "$WORK/restore"; rmdir "$WORK/restore"
measure "$BS" restore latest --repo "$WORK/repo" --target-dir "$WORK/restore" --parallel "$N" --progress none >/dev/null
bs_restore=$T

# mariabackup | pigz --fast
fresh "$WORK/mbtmp"
measure bash -o pipefail -c '"$@" 2>"'"$WORK"'/pigz.log" | pigz --fast -p '"$N"' > "'"$WORK"'/backup.gz"' _ "${MB[@]}"
pigz_backup=$T; pigz_size=$(size_of "$WORK/backup.gz")
fresh "$WORK/restore"
measure bash -o pipefail -c 'pigz -dc -p '"$N"' "'"$WORK"'/backup.gz" | mbstream -x -p '"$N"' -C "'"$WORK"'/restore"'
pigz_restore=$T; rm -f "$WORK/backup.gz"

# mariabackup | zstd -1 -T N
fresh "$WORK/mbtmp"
measure bash -o pipefail -c '"$@" 2>"'"$WORK"'/zstd.log" | zstd -1 -q -T'"$N"' > "'"$WORK"'/backup.zst"' _ "${MB[@]}"
zstd_backup=$T; zstd_size=$(size_of "$WORK/backup.zst")
fresh "$WORK/restore"
measure bash -o pipefail -c 'zstd -dc -q -T'"$N"' "'"$WORK"'/backup.zst" | mbstream -x -p '"$N"' -C "'"$WORK"'/restore"'
zstd_restore=$T; rm -f "$WORK/backup.zst"
rm -rf "$WORK/restore" "$WORK/repo"

echo
echo "dataset: sysbench, $TABLES tables, datadir $(human "$datadir_size"); N=$N; $(nproc) cores; $(uname -r)"
echo
row "pipeline" "backup s" "restore s" "output" "backup vs backstream" "restore vs backstream"
row "---" "---:" "---:" "---:" "---:" "---:"
row "backstream (zstd:1)" "$bs_backup" "$bs_restore" "$(human "$bs_size")" "1.00" "1.00"
row "mariabackup \| pigz --fast -p $N" "$pigz_backup" "$pigz_restore" "$(human "$pigz_size")" "$(ratio "$pigz_backup" "$bs_backup")x" "$(ratio "$pigz_restore" "$bs_restore")x"
row "mariabackup \| zstd -1 -T$N" "$zstd_backup" "$zstd_restore" "$(human "$zstd_size")" "$(ratio "$zstd_backup" "$bs_backup")x" "$(ratio "$zstd_restore" "$bs_restore")x"
echo
echo "backstream/pigz: backup $(ratio "$bs_backup" "$pigz_backup")x, restore $(ratio "$bs_restore" "$pigz_restore")x (targets 0.4x, 0.2x)"
echo "backstream/zstd: backup $(ratio "$bs_backup" "$zstd_backup")x, restore $(ratio "$bs_restore" "$zstd_restore")x, size $(ratio "$bs_size" "$zstd_size")x (targets 0.9x, 0.85x, <= 1.0x)"

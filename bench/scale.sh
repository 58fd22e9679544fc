#!/usr/bin/env bash
# Many tables: backstream's steps against the peers' on servers of many small
# InnoDB tables (a multi-tenant shape), with wall time and peak RSS per step,
# and how each step grows per 10x tables.
#
#   bench/scale.sh                           # 1,000 and 10,000 tables, N=2
#   COUNTS="1000 10000 100000" bench/scale.sh # and 100,000 (hours: the dataset
#                                            # alone takes a while to build)
#   STEPS=logical bench/scale.sh             # only the logical steps (physical, logical, dedup, s3, all)
#
# The dataset: COUNT tables in COUNT/100 schemas (s0001, s0002, ...), each
# table 20 rows with a primary key and a secondary index, built once per
# count and kept in $BENCH_OUT/scale-COUNT. Every backstream step runs under
# /usr/bin/time: wall seconds and peak RSS. A peer's pipeline is timed the
# same way; its RSS is that of its biggest process.
#
# The steps, backstream / peer:
#   physical backup            / mariabackup --stream=xbstream | zstd -1 -T$N
#   restore --no-sync          / zstd -dc | mbstream -x -p $N (page cache)
#   restore (durable)          / the same, then sync
#   restore --prepare          / mariabackup --prepare of the extracted copy
#   list, verify, verify --restore-test
#   list of 1,000 backups (the last full copied 999 times, bench/manybackups)
#   incremental after writing to 1% of the tables
#                              / mariabackup --incremental-basedir | zstd
#   restore --table (one table, into the running source, --as a new name)
#   expire (of a full and its incremental, with a newer full kept)
#   deduplicated full backup, its restore --prepare, verify, a second one
#   after writing to 1% of the tables, expire
#                              / the same into a plain repository (bytes stored)
#   logical backup             / mydumper -t $N
#   logical restore            / myloader -t $N (each into a fresh server)
# The logical restores are checked: the table count and the sum of every
# table's rows on the loaded server equal the source's.
#
# The S3 steps (STEPS=s3, or all) count the requests backstream sends to an
# object store, as --metrics-file reports them (PUT, POST and LIST; GET
# and HEAD), for a backup, a restore, verify, an incremental, the restore
# of one table, and list, into a MinIO repository; and what a month of
# nightly backups and restore tests costs in requests at AWS S3's list
# prices.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
COUNTS=${COUNTS:-1000 10000}
N=${N:-2}
STEPS=${STEPS:-all}
ROWS=20
./scripts/deps.sh mydumper bc zstd jq >/dev/null

# mariabackup opens a file per tablespace: 100,000 tables need more than
# the 20,000 open files a machine here allows by default. As root, every
# tool of the run gets the kernel's most (fs.nr_open).
if [ "$(id -u)" = 0 ]; then
  ulimit -Hn "$(cat /proc/sys/fs/nr_open)" 2>/dev/null || true   # not in every container
  ulimit -Sn "$(ulimit -Hn)"
fi

BS=$BENCH_OUT/backstream
go build -o "$BS" ./cmd/backstream
go build -o "$BENCH_OUT/pitrload" ./bench/pitrload
go build -o "$BENCH_OUT/manybackups" ./bench/manybackups

# measure KEY COMMAND...: runs the command with its output discarded,
# recording wall seconds in T[KEY] and peak RSS in MiB in R[KEY]; fails
# (naming the command) when it does, so a failure is never a time. Each
# step starts with the caches dropped (as root): creating 20,000 files on
# an aged ext4 reads inode bitmaps and tables, and whichever tool ran
# second found them cached and looked up to 5x faster (the same restore
# took 2 s or 12 s by its place in the run). Cold is also what a restore
# meets.
measure() {
  local key=$1 tf; shift
  tf=$(mktemp)
  sync
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  if ! /usr/bin/time -f '%e %M' -o "$tf" "$@" >/dev/null 2>"$WORK/$key.err"; then
    tail -5 "$WORK/$key.err" >&2
    echo "failed: $*" >&2
    rm -f "$tf"
    return 1
  fi
  read -r T[$key] rss <"$tf"
  R[$key]=$(( rss / 1024 ))
  rm -f "$tf"
}

# scale_dataset DIR COUNT: starts a sandbox on DIR holding COUNT tables,
# building them on first use (DIR/dataset.ok holds the count once built).
scale_dataset() {
  local dir=$1 count=$2
  if [ -f "$dir/dataset.ok" ]; then
    [ "$(cat "$dir/dataset.ok")" = "$count" ] || { echo "$dir holds another dataset: remove it" >&2; return 1; }
    sandbox_start "$dir" --innodb-open-files=4000
    return
  fi
  if [ -e "$dir/data" ]; then
    echo "$dir has no dataset.ok (an interrupted build): remove it to rebuild" >&2
    return 1
  fi
  # Built with the redo log written but not flushed at each commit:
  # the build is not what is measured.
  sandbox_start "$dir" --innodb-flush-log-at-trx-commit=0 --innodb-open-files=4000
  echo "building $count tables in $dir" >&2
  local start; start=$(now)
  local schemas=$(( (count + 99) / 100 ))
  for s in $(seq 1 "$schemas"); do
    local db; db=$(printf 's%04d' "$s")
    {
      echo "CREATE DATABASE $db; USE $db;"
      local first=$(( (s - 1) * 100 + 1 )) last=$(( s * 100 ))
      (( last <= count )) || last=$count
      for t in $(seq "$first" "$last"); do
        printf 'CREATE TABLE t%06d (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL, pad CHAR(60) NOT NULL, KEY k (k)) ENGINE=InnoDB;\n' "$t"
        printf "INSERT INTO t%06d SELECT seq, seq * 7919 %% 1000, MD5(seq + %d), 'pad' FROM seq_1_to_%d;\n" "$t" "$t" "$ROWS"
      done
    } | mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot
  done
  mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'RESET MASTER'
  sandbox_stop
  echo "$count" >"$dir/dataset.ok"
  echo "built $count tables in $(elapsed "$start") s" >&2
  sandbox_start "$dir" --innodb-open-files=4000
}

# fingerprint SOCKET: the number of tables in the s* schemas and the
# number of their rows, the pair a complete load must reproduce; fails
# when a query does.
fingerprint() {
  local sql=(mariadb --no-defaults --socket="$1" -uroot -N -B)
  local tables dbs db q n total=0
  tables=$("${sql[@]}" -e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA REGEXP '^s[0-9]{4}$' AND TABLE_TYPE = 'BASE TABLE'")
  dbs=$("${sql[@]}" -e "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME REGEXP '^s[0-9]{4}$' ORDER BY 1")
  for db in $dbs; do
    # One query per schema: a UNION ALL of its tables' row counts.
    q=$("${sql[@]}" -e "SET SESSION group_concat_max_len = 1000000;
      SELECT GROUP_CONCAT(CONCAT('SELECT COUNT(*) AS n FROM \`$db\`.\`', TABLE_NAME, '\`') SEPARATOR ' UNION ALL ')
      FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db'")
    n=$("${sql[@]}" -e "SELECT SUM(n) FROM ($q) x")
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "fingerprint: counting the rows of $db failed" >&2; return 1; }
    total=$(( total + n ))
  done
  [[ "$tables" =~ ^[0-9]+$ ]] && (( tables > 0 )) || { echo "fingerprint: no tables" >&2; return 1; }
  echo "$tables $total"
}

# check_fingerprint NAME SOCKET: the loaded server must match the source.
check_fingerprint() {
  local got; got=$(fingerprint "$2") || return 1
  if [ "$got" != "$SRC_PRINT" ]; then
    echo "$1: the loaded server holds $got (tables, rows), the source $SRC_PRINT" >&2
    return 1
  fi
}

# requests KEY: after a step run with --metrics-file $WORK/KEY.prom, the
# object-store requests it sent: W[KEY] (PUT, POST, LIST) and G[KEY]
# (GET, HEAD).
requests() {
  local key=$1 metric
  for metric in write read; do
    local v
    v=$(awk -v m="backstream_last_run_s3_${metric}_requests" '$1 ~ "^" m "{" { print $2 }' "$WORK/$key.prom")
    [ "$(echo "$v" | wc -w)" = 1 ] || { echo "not one series of $metric requests in $WORK/$key.prom" >&2; return 1; }
    if [ "$metric" = write ]; then W[$key]=$(printf '%.0f' "$v"); else G[$key]=$(printf '%.0f' "$v"); fi
  done
}

declare -A T R W G
report=()
s3report=()
for count in $COUNTS; do
  WORK=$BENCH_OUT/scale-work-$count
  rm -rf "$WORK"; mkdir -p "$WORK"
  DATA=$BENCH_OUT/scale-$count
  trap 'sandbox_stop; SANDBOX_PID=${SRC_PID:-} sandbox_stop; if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi' EXIT
  scale_dataset "$DATA" "$count"
  SRC=$SANDBOX_SOCKET
  SRC_PID=$SANDBOX_PID SANDBOX_PID=
  SRC_PRINT=$(fingerprint "$SRC")
  [ "$SRC_PRINT" = "$count $(( count * ROWS ))" ] || { echo "the source holds $SRC_PRINT (tables, rows), not $count tables of $ROWS rows" >&2; exit 1; }
  datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*' --exclude='ib_logfile*')
  find "$DATA/data" -type f -exec cat {} + >/dev/null
  CONN=(--no-defaults --socket "$SRC" --user root --progress none)
  # Where even the hard limit of open files is short of three a table (a
  # container whose limit root cannot raise), every mariabackup of the
  # run, backstream's and the peers', runs with --close-files: safe here,
  # where no DDL runs during a backup, and said in the report.
  MBX=() closing=
  if [ "$(ulimit -Hn)" -lt $(( count * 3 )) ]; then
    MBX=(--close-files) closing="; every mariabackup with --close-files (open files limited to $(ulimit -Hn))"
  fi
  BSX=("${MBX[@]/#/--mariabackup-option=}")
  REPO=$WORK/repo
  "$BS" init --repo "$REPO" >/dev/null
  T=() R=() W=() G=()

  if [ "$STEPS" = all ] || [ "$STEPS" = physical ]; then
    echo "$count tables: physical" >&2
    measure bs_backup "$BS" backup --repo "$REPO" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    MB=(mariabackup --no-defaults --user=root --socket="$SRC" --datadir="$DATA/data" --backup "${MBX[@]}"
      --stream=xbstream --parallel="$N")
    mkdir -p "$WORK/mbtmp" "$WORK/mbtmp2" "$WORK/mblsn"
    measure mb_backup bash -o pipefail -c '"${@:2}" --target-dir="$1/mbtmp" --extra-lsndir="$1/mblsn" 2>"$1/mb.log" | zstd -1 -q -T'"$N"' >"$1/full.zst"' _ "$WORK" "${MB[@]}"
    # mariabackup's time to its first file: the part no pipeline shortens
    # (its log lines are "[NN] YYYY-MM-DD HH:MM:SS ...").
    first=$(awk '$2 ~ /^20/ && !s { s = $2 " " $3 } $2 ~ /^20/ && /Streaming/ { print s "|" $2 " " $3; exit }' "$WORK/mb.log")
    if [ -n "$first" ]; then
      first="first file streamed $(( $(date -d "${first#*|}" +%s) - $(date -d "${first%|*}" +%s) )) s after mariabackup started"
    fi
    measure bs_restore_nosync "$BS" restore latest --repo "$REPO" --target-dir "$WORK/r1" --parallel "$N" --progress none --no-sync
    mkdir -p "$WORK/m1"
    measure mb_restore_nosync bash -o pipefail -c 'zstd -dc -q -T'"$N"' "$1/full.zst" | mbstream -x -p '"$N"' -C "$1/m1"' _ "$WORK"
    measure bs_restore "$BS" restore latest --repo "$REPO" --target-dir "$WORK/r2" --parallel "$N" --progress none
    mkdir -p "$WORK/m2"
    measure mb_restore bash -o pipefail -c 'zstd -dc -q -T'"$N"' "$1/full.zst" | mbstream -x -p '"$N"' -C "$1/m2" && sync' _ "$WORK"
    # The extracted copies stay until the count's run is over: on ext4,
    # creating files within 35 s of deleting many scans past every
    # recently deleted inode (recently_deleted, find_inode_bit: over half
    # of a 10,000-table restore's CPU, in the kernel), so whichever step
    # came right after a deletion paid for it, up to 5x.
    measure bs_prepare "$BS" restore latest --repo "$REPO" --target-dir "$WORK/r3" --prepare --parallel "$N" --progress none --no-sync
    measure mb_prepare mariabackup --prepare --target-dir="$WORK/m1"
    measure bs_list "$BS" list --repo "$REPO"
    measure bs_verify "$BS" verify --repo "$REPO" --progress none
    measure bs_verify_rt "$BS" verify --repo "$REPO" --restore-test --progress none
    # 1% of the tables written to.
    step=100
    mariadb --no-defaults --socket="$SRC" -uroot -N -B -e "
      SELECT CONCAT('UPDATE \`', TABLE_SCHEMA, '\`.\`', TABLE_NAME, '\` SET k = k + 1 WHERE id = 1;')
      FROM information_schema.TABLES WHERE TABLE_SCHEMA REGEXP '^s[0-9]{4}$' ORDER BY TABLE_SCHEMA, TABLE_NAME" |
      awk -v s=$step 'NR % s == 1' | mariadb --no-defaults --socket="$SRC" -uroot
    measure bs_incremental "$BS" backup --incremental --repo "$REPO" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    measure mb_incremental bash -o pipefail -c '"${@:2}" --target-dir="$1/mbtmp2" --incremental-basedir="$1/mblsn" 2>"$1/mbi.log" | zstd -1 -q -T'"$N"' >"$1/inc.zst"' _ "$WORK" "${MB[@]}"
    rm -f "$WORK/full.zst" "$WORK/inc.zst"
    measure bs_table "$BS" restore latest --repo "$REPO" --table s0001.t000001 --as s0001.t_copy --apply-to --no-binlog "${CONN[@]}"
    mariadb --no-defaults --socket="$SRC" -uroot -e 'DROP TABLE s0001.t_copy'
    measure bs_backup2 "$BS" backup --repo "$REPO" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    measure bs_expire "$BS" expire --repo "$REPO" --keep-last 1 --confirm --progress none
    # A year and more of nightly backups: the one left, copied 999 times
    # (bench/manybackups: hard links, each copy committed as a backup).
    "$BENCH_OUT/manybackups" -repo "$REPO" -from latest -copies 999
    measure bs_list1000 "$BS" list --repo "$REPO"
    listed=$("$BS" list --repo "$REPO" --json | jq length)
    [ "$listed" = 1000 ] || { echo "list shows $listed backups, not 1000" >&2; exit 1; }
  fi

  if [ "$STEPS" = all ] || [ "$STEPS" = logical ]; then
    echo "$count tables: logical" >&2
    # A repository of its own, whose latest backup is the logical one.
    "$BS" init --repo "$WORK/lrepo" >/dev/null
    measure bs_logical "$BS" backup --logical --repo "$WORK/lrepo" --parallel "$N" "${CONN[@]}"
    measure myd_dump mydumper -S "$SRC" -u root -t "$N" -o "$WORK/myd" --regex '^s[0-9]{4}\.'
    # Each load into a fresh, empty server, started and stopped untimed.
    sandbox_start "$WORK/t1" --innodb-open-files=4000
    measure bs_load "$BS" restore latest --repo "$WORK/lrepo" --parallel "$N" --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none
    check_fingerprint "backstream" "$SANDBOX_SOCKET"
    sandbox_stop
    sandbox_start "$WORK/t2" --innodb-open-files=4000
    measure myl_load myloader -S "$SANDBOX_SOCKET" -u root -t "$N" -d "$WORK/myd"
    check_fingerprint "myloader" "$SANDBOX_SOCKET"
    sandbox_stop
  fi
  if [ "$STEPS" = all ] || [ "$STEPS" = dedup ]; then
    echo "$count tables: deduplicating repository" >&2
    # A plain and a deduplicating repository of their own, each backup
    # and restore of one timed beside the other's.
    "$BS" init --repo "$WORK/prepo" >/dev/null
    "$BS" init --repo "$WORK/drepo" --dedup >/dev/null
    measure dd_plain "$BS" backup --repo "$WORK/prepo" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    measure dd_backup "$BS" backup --repo "$WORK/drepo" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    measure dd_plain_restore "$BS" restore latest --repo "$WORK/prepo" --target-dir "$WORK/dp" --prepare --parallel "$N" --progress none --no-sync
    measure dd_restore "$BS" restore latest --repo "$WORK/drepo" --target-dir "$WORK/dd" --prepare --parallel "$N" --progress none --no-sync
    measure dd_verify "$BS" verify --repo "$WORK/drepo" --progress none
    mariadb --no-defaults --socket="$SRC" -uroot -N -B -e "
      SELECT CONCAT('UPDATE \`', TABLE_SCHEMA, '\`.\`', TABLE_NAME, '\` SET k = k + 1 WHERE id = 3;')
      FROM information_schema.TABLES WHERE TABLE_SCHEMA REGEXP '^s[0-9]{4}$' ORDER BY TABLE_SCHEMA, TABLE_NAME" |
      awk 'NR % 100 == 1' | mariadb --no-defaults --socket="$SRC" -uroot
    measure dd_plain2 "$BS" backup --repo "$WORK/prepo" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    stored1=$(size_of "$WORK/drepo")
    measure dd_backup2 "$BS" backup --repo "$WORK/drepo" --parallel "$N" "${CONN[@]}" "${BSX[@]}"
    dd_added=$(( $(size_of "$WORK/drepo") - stored1 ))
    dd_first=$stored1 dd_full=$(size_of "$WORK/prepo")
    measure dd_expire "$BS" expire --repo "$WORK/drepo" --keep-last 1 --confirm --progress none
  fi
  if [ "$STEPS" = all ] || [ "$STEPS" = s3 ]; then
    echo "$count tables: S3 requests" >&2
    ./scripts/minio.sh start "$WORK/minio" >/dev/null   # installs MinIO if missing
    # A subshell: the credentials stay in it (sourced, never printed).
    (
      source "$WORK/minio/minio.env"
      export AWS_REGION=us-east-1
      "$BENCH_OUT/pitrload" mkbucket scale
      S3=(--repo s3://scale/repo)
      "$BS" init --repo s3://scale/repo >/dev/null
      # s3step KEY ARGS...: a step with its own metrics file, then its requests.
      s3step() {
        local key=$1; shift
        measure "$key" "$BS" "$@" "${S3[@]}" --metrics-file "$WORK/$key.prom" && requests "$key"
      }
      s3step s3_backup backup --parallel "$N" "${CONN[@]}" "${BSX[@]}"
      s3step s3_restore restore latest --target-dir "$WORK/s3r" --parallel "$N" --progress none --no-sync
      s3step s3_verify verify --progress none
      mariadb --no-defaults --socket="$SRC" -uroot -N -B -e "
        SELECT CONCAT('UPDATE \`', TABLE_SCHEMA, '\`.\`', TABLE_NAME, '\` SET k = k + 1 WHERE id = 2;')
        FROM information_schema.TABLES WHERE TABLE_SCHEMA REGEXP '^s[0-9]{4}$' ORDER BY TABLE_SCHEMA, TABLE_NAME" |
        awk 'NR % 100 == 1' | mariadb --no-defaults --socket="$SRC" -uroot
      s3step s3_incremental backup --incremental --parallel "$N" "${CONN[@]}" "${BSX[@]}"
      s3step s3_table restore latest --table s0001.t000001 --as s0001.t_s3 --apply-to --no-binlog "${CONN[@]}"
      mariadb --no-defaults --socket="$SRC" -uroot -e 'DROP TABLE s0001.t_s3'
      s3step s3_list list
      for key in s3_backup s3_restore s3_verify s3_incremental s3_table s3_list; do
        echo "$key ${T[$key]} ${W[$key]} ${G[$key]}"
      done >"$WORK/s3.results"
    )
    ./scripts/minio.sh stop "$WORK/minio"
    while read -r key t w g; do T[$key]=$t W[$key]=$w G[$key]=$g; done <"$WORK/s3.results"
  fi
  SANDBOX_PID=$SRC_PID sandbox_stop; SRC_PID=

  echo
  echo "$count tables ($(( (count + 99) / 100 )) schemas of up to 100, $ROWS rows each), datadir $(human "$datadir_size") without the redo log and binary logs; N=$N; $(nproc) cores${first:+; mariabackup: $first}$closing"
  echo
  row "step" "backstream s" "RSS MiB" "peer" "peer s" "peer RSS MiB" "backstream / peer"
  row "---" "---:" "---:" "---" "---:" "---:" "---:"
  line() { # line STEP BSKEY [PEER PEERKEY]
    [ -n "${T[$2]:-}" ] || return 0
    if [ -n "${4:-}" ]; then
      row "$1" "${T[$2]}" "${R[$2]}" "$3" "${T[$4]}" "${R[$4]}" "$(ratio "${T[$2]}" "${T[$4]}")x"
    else
      row "$1" "${T[$2]}" "${R[$2]}" "" "" "" ""
    fi
    report+=("$count $2 ${T[$2]} ${R[$2]}")
  }
  line "physical backup" bs_backup "mariabackup \| zstd" mb_backup
  line "restore --no-sync" bs_restore_nosync "zstd -d \| mbstream -x" mb_restore_nosync
  line "restore (durable)" bs_restore "the same, then sync" mb_restore
  if [ -n "${T[mb_prepare]:-}" ]; then
    T[mb_prepare_all]=$(echo "${T[mb_restore_nosync]} + ${T[mb_prepare]}" | bc -l | xargs printf '%.2f')
    R[mb_prepare_all]=$(( R[mb_restore_nosync] > R[mb_prepare] ? R[mb_restore_nosync] : R[mb_prepare] ))
  fi
  line "restore --prepare" bs_prepare "zstd -d \| mbstream -x; mariabackup --prepare" mb_prepare_all
  line "list" bs_list
  line "list (1,000 backups)" bs_list1000
  line "verify" bs_verify
  line "verify --restore-test" bs_verify_rt
  line "incremental (1% of tables written)" bs_incremental "mariabackup --incremental \| zstd" mb_incremental
  line "restore --table (one, --apply-to)" bs_table
  line "a second full backup" bs_backup2
  line "expire (a full and its incremental)" bs_expire
  line "deduplicated full backup" dd_backup "backstream backup (plain)" dd_plain
  line "restore --prepare of it" dd_restore "of the plain one" dd_plain_restore
  line "verify of it" dd_verify
  line "a second deduplicated full (1% of tables written)" dd_backup2 "backstream backup (plain)" dd_plain2
  line "expire --keep-last 1 of the deduplicating repository" dd_expire
  line "logical backup" bs_logical "mydumper -t $N" myd_dump
  line "logical restore" bs_load "myloader -t $N" myl_load
  if [ -n "${T[dd_backup]:-}" ]; then
    echo
    echo "deduplicating repository: the first backup $(human "$dd_first") (both plain fulls $(human "$dd_full")), the second added $(human "$dd_added")"
  fi
  if [ -n "${T[s3_backup]:-}" ]; then
    echo
    echo "$count tables into MinIO: the requests of each step (PUT, POST, LIST: billed at \$0.005 per 1,000; GET, HEAD: \$0.0004)"
    echo
    row "step" "s" "PUT/POST/LIST" "GET/HEAD" "cost at list prices \$"
    row "---" "---:" "---:" "---:" "---:"
    for s3step in "backup:s3_backup" "restore --no-sync:s3_restore" "verify:s3_verify" "incremental (1% of tables written):s3_incremental" \
      "restore --table (one, --apply-to):s3_table" "list:s3_list"; do
      key=${s3step##*:}
      row "${s3step%:*}" "${T[$key]}" "${W[$key]}" "${G[$key]}" "$(echo "${W[$key]} * 0.005 / 1000 + ${G[$key]} * 0.0004 / 1000" | bc -l | xargs printf '%.6f')"
      s3report+=("$count $key ${W[$key]} ${G[$key]}")
    done
    # A month of nights: a full backup and a verify each night.
    echo
    echo "a month of nightly full backups and verifies: \$$(echo "30 * ((${W[s3_backup]} + ${W[s3_verify]}) * 0.005 / 1000 + (${G[s3_backup]} + ${G[s3_verify]}) * 0.0004 / 1000)" | bc -l | xargs printf '%.4f') in requests"
  fi
  # Only now, after every step of this count (see the extracted copies).
  rm -rf "$WORK"
done

# Growth: each step's time and RSS at one count against the count before.
if [ "$(echo "$COUNTS" | wc -w)" -gt 1 ]; then
  echo
  echo "growth per step (time, RSS) from one count to the next:"
  printf '%s\n' "${report[@]}" | awk '
    { key = $2; if (key in t) printf "  %-18s %6d -> %-6d tables: time x%.2f, RSS x%.2f\n", key, c[key], $1, $3 / (t[key] > 0 ? t[key] : 0.01), $4 / (r[key] > 0 ? r[key] : 1)
      t[key] = $3; r[key] = $4; c[key] = $1 }'
fi
if [ "${#s3report[@]}" -gt 0 ] && [ "$(echo "$COUNTS" | wc -w)" -gt 1 ]; then
  echo
  echo "growth of the S3 requests per step (PUT/POST/LIST, GET/HEAD) from one count to the next:"
  printf '%s\n' "${s3report[@]}" | awk '
    { key = $2; if (key in w) printf "  %-16s %6d -> %-6d tables: x%.2f, x%.2f\n", key, c[key], $1, $3 / (w[key] > 0 ? w[key] : 1), $4 / (g[key] > 0 ? g[key] : 1)
      w[key] = $3; g[key] = $4; c[key] = $1 }'
fi

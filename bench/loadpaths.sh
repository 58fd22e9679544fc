#!/usr/bin/env bash
# Ways a table's rows reach the server, without backstream: which LOAD DATA
# shape is fastest on this version, so that the logical load takes it.
# Two mariadb clients at once, two sysbench tables each (as backstream and
# mariadb-import --parallel=2 would), every table created without its
# secondary index and given it after its rows; each shape is timed from the
# first row to the last index, into a fresh server without a binary log,
# and checked against the source's CHECKSUM TABLE.
#
#   bench/loadpaths.sh                     # the host's 10.11, about 460 MB of rows
#   VERSION=11.8 ROUNDS=4 bench/loadpaths.sh
#   SHAPES="files-fk one-fk" bench/loadpaths.sh
#
# The shapes (FILES: each table's rows split into that many files, 4):
#   files-nochecks  one LOAD DATA LOCAL per file, unique and foreign key
#                   checks off (how backstream loaded until issue #32)
#   files-fk        the same, unique checks on (how it loads now)
#   one-nochecks    the table in one LOAD DATA LOCAL, checks off
#   one-fk          the table in one LOAD DATA LOCAL, unique checks on
#   files-onetx     the files in one transaction, checks off
#   import          mariadb-import: the server reads the table's one file
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-}
if [ -n "$VERSION" ]; then
  MARIADB_BASEDIR=$(./scripts/versions.sh basedir "$VERSION")
  export MARIADB_BASEDIR
fi
SIZE_MB=${SIZE_MB:-460}
TABLES=4
FILES=${FILES:-4}
ROUNDS=${ROUNDS:-2}
SHAPES=${SHAPES:-files-nochecks files-fk one-nochecks one-fk files-onetx import}
source bench/lib.sh
./scripts/deps.sh sysbench bc >/dev/null

WORK=$BENCH_OUT/loadpaths
DATA=$(dataset_dir "$SIZE_MB")
[ -z "$VERSION" ] || DATA=$DATA-$VERSION
rm -rf "$WORK"; mkdir -p "$WORK"
SRC_PID=
stop_all() { sandbox_stop; SANDBOX_PID=$SRC_PID sandbox_stop; }
trap stop_all EXIT
dataset_start "$DATA" "$SIZE_MB" "$TABLES"
SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID
SANDBOX_PID=
SRC_SUMS=$(sbtest_source_checksums "$SRC" "$TABLES" "the dataset")

# The rows as LOAD DATA's defaults read them, whole and in FILES parts
# (the server writes them: it runs as this user).
for i in $(seq 1 "$TABLES"); do
  mariadb --no-defaults --socket="$SRC" -uroot -e "SELECT * FROM sbtest.sbtest$i INTO OUTFILE '$WORK/t$i.txt'"
  (cd "$WORK" && split -n "l/$FILES" -d "t$i.txt" "t$i.part.")
  mkdir -p "$WORK/import$i" && ln -s "$WORK/t$i.txt" "$WORK/import$i/sbtest$i.txt"
done

load_table() { # load_table SHAPE I
  local shape=$1 i=$2 q="SET SESSION sql_log_bin = 0;" f
  local into="INTO TABLE sbtest.sbtest$i;"
  case $shape in
    *-nochecks | files-onetx) q+=" SET SESSION unique_checks = 0, foreign_key_checks = 0;" ;;
    *-fk) q+=" SET SESSION foreign_key_checks = 0;" ;;
  esac
  case $shape in
    files-onetx) q+=" BEGIN;"; for f in "$WORK/t$i.part."*; do q+=" LOAD DATA LOCAL INFILE '$f' $into"; done; q+=" COMMIT;" ;;
    files-*) for f in "$WORK/t$i.part."*; do q+=" LOAD DATA LOCAL INFILE '$f' $into"; done ;;
    one-*) q+=" LOAD DATA LOCAL INFILE '$WORK/t$i.txt' $into" ;;
    import) q= ;;
    *) echo "unknown shape $shape" >&2; return 1 ;;
  esac
  if [ -z "$q" ]; then
    mariadb-import --no-defaults --socket="$TARGET" -uroot sbtest "$WORK/import$i/sbtest$i.txt" >/dev/null
  else
    mariadb --no-defaults --local-infile=1 --socket="$TARGET" -uroot -e "$q"
  fi
  mariadb --no-defaults --socket="$TARGET" -uroot -e "ALTER TABLE sbtest.sbtest$i ADD INDEX k_$i (k)"
}

declare -A T
for round in $(seq 1 "$ROUNDS"); do
  for shape in $SHAPES; do
    target_start
    mariadb --no-defaults --socket="$TARGET" -uroot -e "CREATE DATABASE sbtest"
    for i in $(seq 1 "$TABLES"); do
      mariadb --no-defaults --socket="$TARGET" -uroot sbtest -e "CREATE TABLE sbtest$i (id int NOT NULL AUTO_INCREMENT, k int NOT NULL DEFAULT 0, c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '', PRIMARY KEY (id)) ENGINE=InnoDB"
    done
    t=$(now)
    (load_table "$shape" 1 && load_table "$shape" 2) & a=$!
    (load_table "$shape" 3 && load_table "$shape" 4) & b=$!
    wait "$a"; wait "$b"
    T[$shape]="${T[$shape]:-} $(elapsed "$t")"
    check_load "$shape"
  done
done

echo "server: $(mariadbd --no-defaults ${MARIADB_BASEDIR:+--basedir="$MARIADB_BASEDIR"} --version | sed 's/.*Ver //')"
echo "sysbench $TABLES tables of $(dataset_rows "$SIZE_MB" "$TABLES") rows, $FILES files each; $(nproc) cores; seconds for all tables, $ROUNDS rounds"
for shape in $SHAPES; do
  printf '  %-16s best %s  all:%s\n' "$shape" "$(printf '%s\n' ${T[$shape]} | sort -g | head -1)" "${T[$shape]}"
done

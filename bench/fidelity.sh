#!/usr/bin/env bash
# The fidelity corpus (internal/fidelitytest/corpus) through backstream and
# through the peers' pipelines, judged by the same fingerprints as the
# corpus test (TestFidelityCorpus): every fixture is loaded into a source,
# taken through each tool into a fresh server, and its database's
# fingerprint compared with the source's.
#
#   bench/fidelity.sh                 # prints one Markdown row per fixture
#   SKIP_BACKSTREAM=1 bench/fidelity.sh
#
# Logical tools run with both servers strict (TRADITIONAL), then both
# permissive (''), as the corpus test does:
#   mariadb-dump --routines --events --triggers --databases ... | mariadb
#   mydumper --routines --events --triggers --regex ... ; myloader
#   backstream backup --logical ; backstream restore
# Physical tools run on the fixtures that take the physical path:
#   mariabackup --backup --stream=xbstream | mbstream -x ; mariabackup --prepare ; start
#   backstream backup ; backstream restore --prepare ; start
# A logical target loads the engines the server ships as plugins (ARCHIVE,
# BLACKHOLE), as the corpus test's targets do. A fixture that names an
# object to refuse is taken by itself: backstream passes it when its backup
# fails naming the object; the peers are shown round-tripping it.
# Cells: pass; fail (the fingerprints differ; the differences are in
# $BENCH_OUT/fidelity/<tool>-<mode>.diff); error (the pipeline itself
# failed; its log is beside); - (the fixture does not take that path).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SKIP_BACKSTREAM=${SKIP_BACKSTREAM:-0}
BUFFER_POOL=${BUFFER_POOL:-256M}   # small fixtures: a small pool per server
./scripts/deps.sh mydumper >/dev/null

BS=$BENCH_OUT/backstream
FX=$BENCH_OUT/fidelity-corpus
[ "$SKIP_BACKSTREAM" = 1 ] || go build -o "$BS" ./cmd/backstream
go build -o "$FX" ./bench/fidelity
WORK=$BENCH_OUT/fidelity
rm -rf "$WORK"; mkdir -p "$WORK"
TARGET_ARGS=(--plugin-load-add=ha_archive --plugin-load-add=ha_blackhole)

SRC_PID=
stop_all() { sandbox_stop; SANDBOX_PID=$SRC_PID sandbox_stop; }
trap stop_all EXIT
declare -A R   # R[tool/mode/fixture] = pass | fail | missing | error

source_start() { # source_start NAME SQLMODE PATH: a source holding PATH's fixtures; sets SRC
  sandbox_start "$WORK/$1" --sql-mode="$2"
  SRC=$SANDBOX_SOCKET SRC_PID=$SANDBOX_PID SANDBOX_PID=
  "$FX" load "$SRC" "$3" "$4"
  "$FX" fingerprint "$SRC" "$3" "$4" "$WORK/$1.want.json"
}
source_stop() { SANDBOX_PID=$SRC_PID sandbox_stop; SRC_PID=; }

# judge TOOL KEY PATH MODE SOCKET WANT: fingerprints the target's copies of
# the fixtures PATH takes under MODE and records each one's result under
# TOOL/KEY; a fixture whose own pipeline failed (listed in
# $WORK/TOOL-KEY.failed) is recorded as an error.
judge() {
  local got=$WORK/$1-$2.got.json name result
  "$FX" fingerprint "$5" "$3" "$4" "$got" 2>>"$WORK/$1-$2.diff" || true
  while read -r name result; do
    R[$1/$2/$name]=$result
  done < <("$FX" compare "$6" "$got" 2>>"$WORK/$1-$2.diff")
  if [ -f "$WORK/$1-$2.failed" ]; then
    while read -r name; do R[$1/$2/$name]=error; done <"$WORK/$1-$2.failed"
  fi
}

# logical_round TOOL MODE SQLMODE PATH: the tool takes each fixture's
# database by itself (so that one fixture's failure stays its own) into
# one fresh target of the same sql_mode.
logical_round() {
  local tool=$1 mode=$2 sqlmode=$3 path=$4 log=$WORK/$1-$2.log name db out
  rm -rf "$WORK/target" "$WORK/out-$tool"; mkdir -p "$WORK/out-$tool"
  : >"$WORK/$tool-$mode.failed"
  sandbox_start "$WORK/target" --sql-mode="$sqlmode" --skip-log-bin "${TARGET_ARGS[@]}"
  for name in $("$FX" list "$path" "$mode"); do
    db=fx_$name out=$WORK/out-$tool/$name
    echo "== $name" >>"$log"
    case $tool in
    mariadb-dump)
      mariadb-dump --no-defaults --socket="$SRC" -uroot --routines --events --triggers --databases "$db" >"$out.sql" 2>>"$log" &&
        mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot <"$out.sql" >>"$log" 2>&1 ;;
    mydumper)
      mydumper --socket="$SRC" --user=root --routines --events --triggers --database="$db" --outputdir="$out" >>"$log" 2>&1 &&
        myloader --socket="$SANDBOX_SOCKET" --user=root --directory="$out" >>"$log" 2>&1 ;;
    backstream)
      "$BS" init --repo "$out" >>"$log" 2>&1 &&
        "$BS" backup --logical --repo "$out" --database "$db" --socket "$SRC" --user root --no-defaults >>"$log" 2>&1 &&
        "$BS" restore --repo "$out" --socket "$SANDBOX_SOCKET" --user root --no-defaults >>"$log" 2>&1 ;;
    esac || echo "$name" >>"$WORK/$tool-$mode.failed"
  done
  judge "$tool" "$mode" "$path" "$mode" "$SANDBOX_SOCKET" "$WORK/src-$mode-$path.want.json"
  sandbox_stop
}

logical_tools=(mariadb-dump mydumper)
[ "$SKIP_BACKSTREAM" = 1 ] || logical_tools=(backstream "${logical_tools[@]}")
for mode in strict permissive; do
  sqlmode=TRADITIONAL; [ $mode = permissive ] && sqlmode=
  source_start "src-$mode-logical" "$sqlmode" logical "$mode"
  for tool in "${logical_tools[@]}"; do logical_round "$tool" "$mode" "$sqlmode" logical; done
  source_stop
done

# physical_round TOOL: one physical pipeline from the permissive source.
physical_round() {
  local tool=$1 log=$WORK/$1-physical.log ok=0
  rm -rf "$WORK/pt-$tool"; mkdir -p "$WORK/pt-$tool/data"
  case $tool in
  mariabackup)
    { mariabackup --backup --stream=xbstream --user=root --socket="$SRC" --target-dir="$WORK/pt-$tool/tmp" 2>"$log" |
        mbstream -x -C "$WORK/pt-$tool/data"; } &&
      mariabackup --prepare --target-dir="$WORK/pt-$tool/data" >>"$log" 2>&1 || ok=1 ;;
  backstream)
    "$BS" init --repo "$WORK/pt-$tool/repo" >"$log" 2>&1 &&
      "$BS" backup --repo "$WORK/pt-$tool/repo" --socket "$SRC" --user root --no-defaults >>"$log" 2>&1 &&
      rm -rf "$WORK/pt-$tool/data" &&
      "$BS" restore --repo "$WORK/pt-$tool/repo" --target-dir "$WORK/pt-$tool/data" --prepare >>"$log" 2>&1 || ok=1 ;;
  esac
  if [ $ok = 0 ] && sandbox_start "$WORK/pt-$tool" --sql-mode= >>"$log" 2>&1; then
    judge "$tool" physical physical permissive "$SANDBOX_SOCKET" "$WORK/src-permissive-physical.want.json"
    sandbox_stop
  else
    for name in $("$FX" list physical permissive); do R[$tool/physical/$name]=error; done
  fi
}
# Physical results are recorded under the mode "physical"; the fixtures
# are loaded permissive.
source_start src-permissive-physical "" physical permissive
physical_tools=(mariabackup)
[ "$SKIP_BACKSTREAM" = 1 ] || physical_tools=(backstream "${physical_tools[@]}")
for tool in "${physical_tools[@]}"; do physical_round "$tool"; done
source_stop

# Refusals: backstream's backup must fail naming the object; the peers'
# round trip of the fixture alone is shown beside.
for name in $("$FX" list refuse permissive); do
  want=$("$FX" refusal "$name")
  source_start "src-refuse-$name" "" refuse permissive
  if [ "$SKIP_BACKSTREAM" != 1 ]; then
    "$BS" init --repo "$WORK/refuse-$name" >/dev/null
    if "$BS" backup --logical --repo "$WORK/refuse-$name" --database "fx_$name" --socket "$SRC" --user root --no-defaults >"$WORK/refuse-$name.log" 2>&1; then
      R[backstream/refuse/$name]="not refused"
    elif grep -qF "$want" "$WORK/refuse-$name.log"; then
      R[backstream/refuse/$name]="refused, names $want"
    else
      R[backstream/refuse/$name]="failed without naming $want"
    fi
  fi
  cp "$WORK/src-refuse-$name.want.json" "$WORK/src-permissive-refuse.want.json"
  for tool in mariadb-dump mydumper; do logical_round "$tool" permissive "" refuse; done
  source_stop
done

cell() { # cell TOOL MODES... FIXTURE: one table cell over the modes the fixture took
  local tool=$1 name=${*: -1} m r all=() uniq
  for m in "${@:2:$#-2}"; do
    r=${R[$tool/$m/$name]:-}
    [ -n "$r" ] && all+=("$m: $r")
  done
  [ ${#all[@]} -gt 0 ] || { echo -; return; }
  uniq=$(printf '%s\n' "${all[@]}" | sed 's/^[a-z]*: //' | sort -u)
  if [ "$(wc -l <<<"$uniq")" = 1 ]; then echo "$uniq"; else (IFS=,; echo "${all[*]}" | sed 's/,/, /g'); fi
}
echo
row fixture "backstream logical" "backstream physical" "mariadb-dump \\| mariadb" "mydumper \\| myloader" "mariabackup \\| mbstream"
row --- --- --- --- --- ---
refusals=$("$FX" list refuse permissive)
{ "$FX" list logical permissive; "$FX" list logical strict; "$FX" list physical permissive; echo "$refusals"; } | sort -u |
while read -r name; do
  [ -n "$name" ] || continue
  if grep -qx "$name" <<<"$refusals"; then
    row "$name" "${R[backstream/refuse/$name]:--}" - "$(cell mariadb-dump permissive "$name")" "$(cell mydumper permissive "$name")" -
  else
    row "$name" "$(cell backstream strict permissive "$name")" "$(cell backstream physical "$name")" \
      "$(cell mariadb-dump strict permissive "$name")" "$(cell mydumper strict permissive "$name")" "$(cell mariabackup physical "$name")"
  fi
done

#!/usr/bin/env bash
# A backup streamed straight into another host: backstream send/receive
# against the pipelines built with socat, on two network namespaces joined
# by a veth pair shaped to 1 Gbit/s, with the same N, in one run.
#
#   bench/network.sh                      # ~1 GB sysbench dataset (the cache the other benchmarks share), N=2, 3 rounds
#   RATE=10gbit ROUNDS=5 bench/network.sh
#
# The source server's socket is shared (a file); only the backup crosses the
# veth. Times run from the start of the send to the receiver's exit with an
# extracted datadir ready for prepare, in the page cache (the receiver runs
# with --no-sync, as mbstream -x writes). Needs root (ip netns, tc).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
N=${N:-2}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-1gbit}
TABLES=${TABLES:-4}
./scripts/deps.sh pigz sysbench bc socat >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/network
DATA=$(dataset_dir $((SIZE_GB * 1000)))
NS_SRC=bs_bench_src NS_DST=bs_bench_dst
SRC_IP=10.77.0.1 DST_IP=10.77.0.2
mkdir -p "$WORK"

cleanup() {
  sandbox_stop
  ip netns del "$NS_SRC" 2>/dev/null || true
  ip netns del "$NS_DST" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add "$NS_SRC"; ip netns add "$NS_DST"
ip link add bsb_src type veth peer name bsb_dst
ip link set bsb_src netns "$NS_SRC"; ip link set bsb_dst netns "$NS_DST"
ip -n "$NS_SRC" addr add "$SRC_IP/24" dev bsb_src; ip -n "$NS_DST" addr add "$DST_IP/24" dev bsb_dst
for ns in "$NS_SRC" "$NS_DST"; do ip -n "$ns" link set lo up; done
ip -n "$NS_SRC" link set bsb_src up; ip -n "$NS_DST" link set bsb_dst up
ip netns exec "$NS_SRC" tc qdisc add dev bsb_src root tbf rate "$RATE" burst 512kb latency 50ms
ip netns exec "$NS_DST" tc qdisc add dev bsb_dst root tbf rate "$RATE" burst 512kb latency 50ms
in_src() { ip netns exec "$NS_SRC" "$@"; }
in_dst() { ip netns exec "$NS_DST" "$@"; }
wire_bytes() { ip netns exec "$NS_SRC" cat /sys/class/net/bsb_src/statistics/tx_bytes; }

dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
find "$DATA/data" -type f -exec cat {} + >/dev/null
MB="mariabackup --no-defaults --user=root --socket=$SANDBOX_SOCKET --datadir=$DATA/data --backup --stream=xbstream --parallel=$N --target-dir=$WORK/mbtmp"
TOKEN=$WORK/token
"$BS" token > "$TOKEN"; chmod 600 "$TOKEN"

declare -A T W
add() { T[$1]="${T[$1]:-} $2"; W[$1]=$3; }
fresh() { rm -rf "$1"; mkdir -p "$1"; }

# run_pair NAME RECEIVER_CMD SENDER_CMD: the receiver runs in the destination
# namespace, the sender in the source one; the time covers both.
run_pair() {
  local name=$1 recv=$2 send=$3
  rm -rf "$WORK/mbtmp"; mkdir -p "$WORK/mbtmp"
  sync
  # The receiver runs in a process group of its own (set -m), so that a
  # failed sender can stop all of it rather than leave a listener behind.
  set -m
  in_dst bash -o pipefail -c "$recv" >"$WORK/$name.recv.log" 2>&1 &
  local rpid=$!
  set +m
  sleep 0.5
  local before start; before=$(wire_bytes); start=$(now)
  # A failed run stops the script: its time would measure nothing.
  if ! in_src bash -o pipefail -c "$send" >"$WORK/$name.send.log" 2>&1; then
    echo "failed: $name sender: $send" >&2; tail -5 "$WORK/$name.send.log" >&2
    kill -- -"$rpid" 2>/dev/null || true
    exit 1
  fi
  wait "$rpid" || { echo "failed: $name receiver: $recv" >&2; tail -5 "$WORK/$name.recv.log" >&2; exit 1; }
  add "$name" "$(elapsed "$start")" $(( $(wire_bytes) - before ))
}

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2
  rm -rf "$WORK/bs"
  run_pair backstream \
    "$BS receive --listen $DST_IP:4444 --target-dir $WORK/bs --parallel $N --token-file $TOKEN --progress none --no-sync" \
    "$BS send --to $DST_IP:4444 --parallel $N --no-defaults --socket $SANDBOX_SOCKET --user root --token-file $TOKEN --progress none"
  fresh "$WORK/pigz"
  run_pair pigz \
    "socat -u TCP-LISTEN:4445,reuseaddr STDOUT | pigz -dc -p $N | mbstream -x -p $N -C $WORK/pigz" \
    "$MB 2>$WORK/pigz.mb.log | pigz --fast -p $N | socat -u STDIN TCP:$DST_IP:4445"
  fresh "$WORK/zstd"
  run_pair zstd \
    "socat -u TCP-LISTEN:4446,reuseaddr STDOUT | zstd -dc -q -T$N | mbstream -x -p $N -C $WORK/zstd" \
    "$MB 2>$WORK/zstd.mb.log | zstd -1 -q -T$N | socat -u STDIN TCP:$DST_IP:4446"
  fresh "$WORK/plain"
  run_pair plain \
    "socat -u TCP-LISTEN:4447,reuseaddr STDOUT | mbstream -x -p $N -C $WORK/plain" \
    "$MB 2>$WORK/plain.mb.log | socat -u STDIN TCP:$DST_IP:4447"
done
rm -rf "$WORK/bs" "$WORK/pigz" "$WORK/zstd" "$WORK/plain"

echo
echo "dataset: sysbench, $TABLES tables, $(human "$(size_of "$DATA/data" --exclude='mariadb-bin*')"); N=$N; link $RATE (tbf) over veth between two namespaces; $(nproc) cores; best (median) of $ROUNDS rounds"
echo
row "pipeline" "wall s" "on the wire" "time vs backstream"
row "---" "---:" "---:" "---:"
for k in backstream pigz zstd plain; do
  case $k in
    backstream) label="backstream send / receive (zstd:1, $N streams)";;
    pigz) label="mariabackup \\| pigz --fast -p $N \\| socat → socat \\| pigz -dc \\| mbstream -x";;
    zstd) label="mariabackup \\| zstd -1 -T$N \\| socat → socat \\| zstd -dc \\| mbstream -x";;
    plain) label="mariabackup \\| socat → socat \\| mbstream -x";;
  esac
  row "$label" "$(best $k) ($(median ${T[$k]}))" "$(human "${W[$k]}")" "$(ratio "$(best $k)" "$(best backstream)")x"
done
echo
echo "all runs (s): $(for k in backstream pigz zstd plain; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
other=$(printf '%s\n' "$(best zstd)" "$(best plain)" | sort -g | head -1)
echo "backstream / pigz pipeline: $(ratio "$(best backstream)" "$(best pigz)")x (target <= 0.5x); / best other: $(ratio "$(best backstream)" "$other")x (target <= 0.9x)"

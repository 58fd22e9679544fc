#!/usr/bin/env bash
# A Galera node joining by a state snapshot transfer: the stock
# wsrep_sst_method=mariabackup (socat, with its compressor at its best)
# against wsrep_sst_method=backstream, the joiner reached over a veth pair
# shaped to 1 Gbit/s, with the same N, in one run.
#
#   bench/sst.sh                          # ~2 GB sysbench dataset on the donor, N=2, 3 rounds
#   SIZE_GB=1 ROUNDS=1 bench/sst.sh       # the ~1 GB cache the other benchmarks share
#
# Two namespaces joined by a veth pair (tbf at RATE on both ends): the
# donor, a one-node cluster bootstrapped on a copy of the dataset, in one;
# the joiner, started on an empty datadir, in the other. Every address of
# both nodes (group communication, IST, SST, SQL) is in its namespace;
# sockets are files. The time runs from the joiner's start to its
# wsrep_local_state_comment Synced; then its sbtest checksums must equal
# the donor's, or the run fails. Options that mariabackup must also read
# are in each node's option file, none on the server's command line (the
# stock script hands that to mariabackup, which rejects server options).
# The stock scripts come with mariadb-server: if /usr/bin/wsrep_sst_mariabackup
# is missing, install it by name (scripts/deps.sh mariadb-server) and stop
# and disable the system service it starts. Needs root (ip netns, tc).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-2}
N=${N:-2}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-1gbit}
TABLES=${TABLES:-4}
./scripts/deps.sh sysbench bc socat zstd >/dev/null
for f in /usr/bin/wsrep_sst_mariabackup /usr/bin/wsrep_sst_common /usr/lib/galera/libgalera_smm.so; do
  [ -e "$f" ] || { echo "$f is missing: scripts/deps.sh mariadb-server galera-4, then stop and disable the system mariadb service it starts" >&2; exit 1; }
done

WORK=$BENCH_OUT/sst
BIN=$WORK/bin
mkdir -p "$BIN"
go build -o "$BIN/backstream" ./cmd/backstream
install -m 755 contrib/galera/wsrep_sst_backstream "$BIN/"
DATA=$(dataset_dir $((SIZE_GB * 1000)))
NS_DONOR=bs_sst_donor NS_JOINER=bs_sst_joiner
DONOR_IP=10.78.0.1 JOINER_IP=10.78.0.2
DONOR=$WORK/donor JOINER=$WORK/joiner
DONOR_PID= JOINER_PID=

stop_pid() { [ -n "$1" ] || return 0; kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
cleanup() {
  stop_pid "$JOINER_PID"; JOINER_PID=
  stop_pid "$DONOR_PID"; DONOR_PID=
  sandbox_stop
  ip netns del "$NS_DONOR" 2>/dev/null || true
  ip netns del "$NS_JOINER" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add "$NS_DONOR"; ip netns add "$NS_JOINER"
ip link add bss_donor type veth peer name bss_joiner
ip link set bss_donor netns "$NS_DONOR"; ip link set bss_joiner netns "$NS_JOINER"
ip -n "$NS_DONOR" addr add "$DONOR_IP/24" dev bss_donor; ip -n "$NS_JOINER" addr add "$JOINER_IP/24" dev bss_joiner
for ns in "$NS_DONOR" "$NS_JOINER"; do ip -n "$ns" link set lo up; done
ip -n "$NS_DONOR" link set bss_donor up; ip -n "$NS_JOINER" link set bss_joiner up
ip netns exec "$NS_DONOR" tc qdisc add dev bss_donor root tbf rate "$RATE" burst 512kb latency 50ms
ip netns exec "$NS_JOINER" tc qdisc add dev bss_joiner root tbf rate "$RATE" burst 512kb latency 50ms
wire_bytes() { ip netns exec "$NS_DONOR" cat /sys/class/net/bss_donor/statistics/tx_bytes; }

# The donor's datadir: a copy of the dataset cache (built on first use).
if [ ! -f "$DATA/dataset.ok" ]; then
  dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
fi
sandbox_stop
dataset_copy "$DATA" "$DONOR"
rm -f "$DONOR"/data/mariadb-bin.*
TOKEN=$WORK/token
"$BIN/backstream" token >"$TOKEN"; chmod 600 "$TOKEN"

# node_cnf DIR IP PEER METHOD: the option file of a node in DIR listening
# on IP, joining PEER ("" bootstraps), joining by METHOD.
node_cnf() {
  local dir=$1 ip=$2 peer=$3 method=$4
  cat >"$dir/my.cnf" <<EOF
[mysqld]
user = root
datadir = $dir/data
tmpdir = $dir/tmp
socket = $dir/mysqld.sock
pid-file = $dir/mysqld.pid
log-error = $dir/error.log
bind-address = $ip
port = 13306
skip-name-resolve
innodb_buffer_pool_size = ${BUFFER_POOL:-1G}
innodb_log_file_size = 256M
innodb_buffer_pool_load_at_startup = OFF
innodb_buffer_pool_dump_at_shutdown = OFF
character-set-server = utf8mb4
binlog_format = ROW
innodb_autoinc_lock_mode = 2
wsrep_on = ON
wsrep_provider = /usr/lib/galera/libgalera_smm.so
wsrep_cluster_name = bench
wsrep_cluster_address = gcomm://$peer
wsrep_node_address = $ip
wsrep_sst_receive_address = $ip:4444
wsrep_provider_options = "gmcast.listen_addr=tcp://$ip:4567;ist.recv_addr=$ip:4568;gcache.size=256M"
wsrep_sst_auth = root:
wsrep_sst_method = $method

[sst]
# wsrep_sst_mariabackup: zstd through socat, N copy threads.
compressor = "zstd -1 -T$N"
decompressor = "zstd -d -T$N"
backup-threads = $N
# wsrep_sst_backstream: N streams, zstd (its default).
token-file = $TOKEN
parallel = $N
EOF
}

# start_node VAR NS DIR [options...]: mariadbd on DIR/my.cnf in namespace
# NS, the SST scripts on its PATH; its pid goes into VAR.
start_node() {
  local var=$1 ns=$2 dir=$3; shift 3
  mkdir -p "$dir/data" "$dir/tmp"
  PATH=$BIN:$PATH ip netns exec "$ns" mariadbd --defaults-file="$dir/my.cnf" "$@" >/dev/null 2>&1 &
  printf -v "$var" %s $!
}

# state SOCKET: the node's wsrep_local_state_comment ("" while it takes no
# connections).
state() {
  mariadb --no-defaults --socket="$1" -uroot -N -B -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2 || true
}

# wait_synced SOCKET PID DIR: waits until the node is Synced; fails if its
# server exits first.
wait_synced() {
  while [ "$(state "$1")" != Synced ]; do
    kill -0 "$2" 2>/dev/null || { echo "the node in $3 exited:" >&2; tail -30 "$3/error.log" >&2; return 1; }
    sleep 0.2
  done
}

node_cnf "$DONOR" "$DONOR_IP" "" backstream
start_node DONOR_PID "$NS_DONOR" "$DONOR" --wsrep-new-cluster
wait_synced "$DONOR/mysqld.sock" "$DONOR_PID" "$DONOR"
find "$DONOR/data" -type f -exec cat {} + >/dev/null
want=$(sbtest_source_checksums "$DONOR/mysqld.sock" "$TABLES" donor)

# Each joiner's error log is kept, and the last round's steps printed
# from it (timeline).
LOGS=$BENCH_OUT/sst-logs
rm -rf "$LOGS"; mkdir -p "$LOGS"

# timeline LOG: the steps of a join in a joiner's error log, each with
# its time since the log's first line: the server's SST and state lines
# (second resolution) and the SST script's own (milliseconds).
timeline() {
  python3 - "$1" <<'PY'
import re, sys
from datetime import datetime
start = None
server = re.compile(r"^(\d{4}-\d{2}-\d{2}) +(\d{1,2}:\d{2}:\d{2}) ")
script = re.compile(r"^WSREP_SST: \[(\w+)\] (.*) \((\d{8} \d{2}:\d{2}:\d{2}\.\d{3})\)$")
steps = re.compile(r"Running: 'wsrep_sst|SST received|SST succeeded|Shifting|Synchronized with group|ready for connections|InnoDB: Starting crash recovery|InnoDB: log sequence number")
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    m, t = script.match(line), None
    if m:
        t, what = datetime.strptime(m.group(3), "%Y%m%d %H:%M:%S.%f"), m.group(2)
    else:
        n = server.match(line)
        if n:
            t = datetime.strptime(n.group(1) + " " + n.group(2), "%Y-%m-%d %H:%M:%S")
            what = line[n.end():]
            if start is not None and not steps.search(what):
                continue
    if t is None:
        continue
    if start is None:
        start = t
    print(f"{(t - start).total_seconds():7.2f}  {what[:150]}")
PY
}

declare -A T W
for round in $(seq 1 "$ROUNDS"); do
  for method in mariabackup backstream; do
    echo "round $round of $ROUNDS: $method" >&2
    rm -rf "$JOINER"; mkdir -p "$JOINER"
    node_cnf "$JOINER" "$JOINER_IP" "$DONOR_IP:4567" "$method"
    sync
    before=$(wire_bytes); start=$(now)
    start_node JOINER_PID "$NS_JOINER" "$JOINER"
    wait_synced "$JOINER/mysqld.sock" "$JOINER_PID" "$JOINER" || exit 1
    t=$(elapsed "$start")
    T[$method]="${T[$method]:-} $t"; W[$method]=$(( $(wire_bytes) - before ))
    got=$(sbtest_checksums "$JOINER/mysqld.sock" "$TABLES")
    if [ "$got" != "$want" ]; then
      echo "failed: the joiner's tables after $method differ from the donor's:" >&2
      diff <(echo "$want") <(echo "$got") >&2 || true
      exit 1
    fi
    grep -q "WSREP_SST: \[INFO\]" "$JOINER/error.log" || { echo "failed: $method: no SST script ran on the joiner" >&2; exit 1; }
    cp "$JOINER/error.log" "$LOGS/$method-$round.log"
    stop_pid "$JOINER_PID"; JOINER_PID=
    wait_synced "$DONOR/mysqld.sock" "$DONOR_PID" "$DONOR"
  done
done
rm -rf "$JOINER"

echo
echo "dataset: sysbench, $TABLES tables, $(human "$(size_of "$DONOR/data" --exclude='galera.cache' --exclude='mariadb-bin*')") on the donor; N=$N; link $RATE (tbf) over veth between two namespaces; $(nproc) cores; best (median) of $ROUNDS rounds; joiner start to Synced"
echo
row "wsrep_sst_method" "wall s" "on the wire" "time vs backstream"
row "---" "---:" "---:" "---:"
for k in mariabackup backstream; do
  case $k in
    mariabackup) label="mariabackup (stock script: socat, compressor zstd -1 -T$N, backup-threads $N)";;
    backstream) label="backstream ($N streams, zstd:1)";;
  esac
  row "$label" "$(best $k) ($(median ${T[$k]}))" "$(human "${W[$k]}")" "$(ratio "$(best $k)" "$(best backstream)")x"
done
echo
echo "all runs (s): $(for k in mariabackup backstream; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
echo "backstream / mariabackup: $(ratio "$(best backstream)" "$(best mariabackup)")x (target <= 0.5x)"
echo
echo "where the joiner's time went (last round; seconds since the joiner's first log line; logs in $LOGS):"
for k in mariabackup backstream; do
  echo "  $k:"
  timeline "$LOGS/$k-$ROUNDS.log" | sed 's/^/    /'
done


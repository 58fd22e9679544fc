#!/usr/bin/env bash
# Backup to and restore from an object store: backstream against the pipeline
# DBAs build by hand with rclone, on the sysbench dataset the benchmarks share,
# against a local MinIO reached through a latency proxy, in one run.
#
#   bench/s3.sh                           # ~1 GB dataset, 10 ms each way, 3 rounds
#   LATENCY_MS=25 ROUNDS=5 bench/s3.sh
#   CONN_MBPS=50 bench/s3.sh              # also cap each connection at 50 MB/s each way
#
# This kernel has no tc netem, so toxiproxy (a TCP proxy on loopback) adds
# LATENCY_MS to every byte in each direction: one round trip costs twice that,
# bandwidth is not capped unless CONN_MBPS asks for a cap per TCP connection
# (a real object store serves one connection far slower than loopback). MinIO's own Prometheus metrics (v3, public for this
# throwaway server) count the S3 requests each run makes, read just before
# and just after it; setup and cleanup go straight to MinIO and are not timed
# or counted. The CPU time of the timed command (with all its children), of
# MinIO and of toxiproxy is read from /proc around each run: on 2 cores they
# all compete for the same CPUs. Restore is timed to an extracted, not yet prepared datadir.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_GB=${SIZE_GB:-1}
ROUNDS=${ROUNDS:-3}
LATENCY_MS=${LATENCY_MS:-10}
CONN_MBPS=${CONN_MBPS:-}
TABLES=${TABLES:-4}
BUCKET=bench
NS=(1 4)             # backstream --parallel values
PIPE_N=2             # the hand-built pipeline: mariabackup --parallel, zstd -T, mbstream -p
TOXIPROXY_MODULE=github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0
./scripts/deps.sh rclone sysbench bc curl >/dev/null

go build -o "$BENCH_OUT/backstream" ./cmd/backstream
BS=$BENCH_OUT/backstream
WORK=$BENCH_OUT/s3
DATA=$(dataset_dir $((SIZE_GB * 1000)))

# toxiproxy v2.5.0 keeps its server in cmd/server (the binary is named
# "server"); build it into bench/out unless a toxiproxy-server is on PATH.
if command -v toxiproxy-server >/dev/null 2>&1; then
  TOXIPROXY=$(command -v toxiproxy-server)
else
  TOXIPROXY=$BENCH_OUT/toxiproxy/server
  if [ ! -x "$TOXIPROXY" ]; then
    echo "building toxiproxy ($TOXIPROXY_MODULE)" >&2
    GOBIN=$BENCH_OUT/toxiproxy go install "$TOXIPROXY_MODULE"
  fi
fi

TOXI_PID=
cleanup() {
  sandbox_stop
  if [ -n "$TOXI_PID" ]; then kill "$TOXI_PID" 2>/dev/null || true; wait "$TOXI_PID" 2>/dev/null || true; fi
  if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi
  rm -rf "$WORK/minio" "$WORK/restore" "$WORK/mbtmp"
}
trap cleanup EXIT
if [ -f "$WORK/minio/minio.pid" ]; then ./scripts/minio.sh stop "$WORK/minio" 2>/dev/null || true; fi
rm -rf "$WORK"
mkdir -p "$WORK"

# MinIO passes its environment on to the server; public metrics let curl
# count requests without a bearer token. The env file holds the credentials:
# it is sourced, never printed.
MINIO_PROMETHEUS_AUTH_TYPE=public ./scripts/minio.sh start "$WORK/minio" >/dev/null   # installs MinIO if missing
source "$WORK/minio/minio.env"
MINIO_URL=$AWS_ENDPOINT_URL
unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3   # every timed command names the proxy itself
export AWS_REGION=us-east-1

api_port=$(free_port)
proxy_port=$(free_port)
[ "$proxy_port" != "$api_port" ] || proxy_port=$(free_port)
"$TOXIPROXY" -host 127.0.0.1 -port "$api_port" >"$WORK/toxiproxy.log" 2>&1 &
TOXI_PID=$!
TOXI_API=http://127.0.0.1:$api_port
for _ in $(seq 1 100); do curl -sf -o /dev/null "$TOXI_API/version" && break; sleep 0.1; done
curl -sf -o /dev/null -X POST "$TOXI_API/proxies" \
  -d "{\"name\":\"minio\",\"listen\":\"127.0.0.1:$proxy_port\",\"upstream\":\"${MINIO_URL#http://}\"}"
for stream in upstream downstream; do
  curl -sf -o /dev/null -X POST "$TOXI_API/proxies/minio/toxics" \
    -d "{\"name\":\"latency_$stream\",\"type\":\"latency\",\"stream\":\"$stream\",\"attributes\":{\"latency\":$LATENCY_MS}}"
done
link="adding $LATENCY_MS ms each way"
if [ -n "$CONN_MBPS" ]; then
  for stream in upstream downstream; do
    curl -sf -o /dev/null -X POST "$TOXI_API/proxies/minio/toxics" \
      -d "{\"name\":\"bandwidth_$stream\",\"type\":\"bandwidth\",\"stream\":\"$stream\",\"attributes\":{\"rate\":$((CONN_MBPS * 1000))}}"
  done
  link="$link and capping each connection at $CONN_MBPS MB/s each way"
fi
PROXY_URL=http://127.0.0.1:$proxy_port
rtt=$(curl -s -o /dev/null -w '%{time_total}' "$PROXY_URL/minio/health/live")

# rclone is configured from the environment only: remote "proxy" goes through
# toxiproxy, remote "direct" (setup and cleanup) straight to MinIO; env_auth
# reads the AWS_* variables already exported, so no secret is written anywhere.
# rclone 1.60's AWS SDK refuses AWS_CA_BUNDLE (set on this machine) with its
# own HTTP transport, and the endpoint is plain http, so rclone runs without it.
for remote in PROXY DIRECT; do
  export "RCLONE_CONFIG_${remote}_TYPE=s3" "RCLONE_CONFIG_${remote}_PROVIDER=Minio" \
    "RCLONE_CONFIG_${remote}_ENV_AUTH=true" "RCLONE_CONFIG_${remote}_REGION=us-east-1"
done
export RCLONE_CONFIG_PROXY_ENDPOINT=$PROXY_URL RCLONE_CONFIG_DIRECT_ENDPOINT=$MINIO_URL
rclone() { env -u AWS_CA_BUNDLE rclone -q "$@"; }
export -f rclone
rclone mkdir "direct:$BUCKET"

# requests_by_api prints "API count" for every S3 API MinIO has served.
requests_by_api() {
  curl -sf "$MINIO_URL/minio/metrics/v3/api/requests" |
    awk '/^minio_api_requests_total\{/ && /type="s3"/ {
           match($0, /name="[^"]*"/); n = substr($0, RSTART + 6, RLENGTH - 7); c[n] += $NF + 0 }
         END { for (n in c) printf "%s %d\n", n, c[n] }' | sort
}
# delta BEFORE AFTER: "API +count ..." for what changed, and the total last.
delta() {
  join -a 2 -e 0 -o 0,1.2,2.2 <(echo "$1") <(echo "$2") |
    awk '$3 != $2 { d = $3 - $2; t += d; printf "%s %d, ", $1, d } END { printf "total %d\n", t }'
}

dataset_start "$DATA" $((SIZE_GB * 1000)) "$TABLES"
datadir_size=$(size_of "$DATA/data" --exclude='mariadb-bin*')
# Everyone reads the datadir from the page cache.
find "$DATA/data" -type f -exec cat {} + >/dev/null
MB=(mariabackup --no-defaults --user=root --socket="$SANDBOX_SOCKET" --datadir="$DATA/data" \
  --backup --stream=xbstream --parallel="$PIPE_N" --target-dir="$WORK/mbtmp")
KEY=rclone/backup.xbstream.zst

fresh() { rm -rf "$1"; mkdir -p "$1"; }
stored() { rclone size --json "direct:$BUCKET/$1" | sed -n 's/.*"bytes":\([0-9]*\).*/\1/p'; }
MINIO_PID=$(cat "$WORK/minio/minio.pid")
TICK=$(getconf CLK_TCK)
# cpu_ticks PID: user + system ticks the process has used (fields 14, 15).
cpu_ticks() { local f; read -r -a f <"/proc/$1/stat"; echo $(( f[13] + f[14] )); }
seconds() { echo "$1 / $TICK" | bc -l | xargs printf '%.1f'; }
declare -A T R D S C
# measure NAME COMMAND...: times one run and counts the requests it made; its
# output goes to WORK/NAME.log, shown only if it fails.
measure() {
  local name=$1; shift
  sync   # no writeback left over from the previous run
  local before after start t self0 self1 minio0 toxi0
  before=$(requests_by_api)
  minio0=$(cpu_ticks "$MINIO_PID"); toxi0=$(cpu_ticks "$TOXI_PID")
  # This shell's children's ticks (fields 16, 17) grow by what the command
  # and everything it started used, once it is reaped; read without a fork.
  read -r -a self0 <"/proc/$BASHPID/stat"
  start=$(now)
  if ! "$@" >"$WORK/$name.log" 2>&1; then
    echo "$name failed:" >&2
    tail -20 "$WORK/$name.log" >&2
    return 1
  fi
  read -r -a self1 <"/proc/$BASHPID/stat"
  t=$(elapsed "$start")
  C[$name]="CPU s: command $(seconds $(( self1[15] + self1[16] - self0[15] - self0[16] ))),\
 MinIO $(seconds $(( $(cpu_ticks "$MINIO_PID") - minio0 ))), toxiproxy $(seconds $(( $(cpu_ticks "$TOXI_PID") - toxi0 )))"
  after=$(requests_by_api)
  D[$name]=$(delta "$before" "$after")
  T[$name]="${T[$name]:-} $t"
  R[$name]="${R[$name]:-} ${D[$name]##*total }"
}

for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2
  for n in "${NS[@]}"; do
    rclone purge "direct:$BUCKET/bs-N$n" 2>/dev/null || true
    "$BS" init --repo "s3://$BUCKET/bs-N$n" --s3-endpoint "$PROXY_URL" >/dev/null
    measure "bs${n}_backup" "$BS" backup --repo "s3://$BUCKET/bs-N$n" --s3-endpoint "$PROXY_URL" --parallel "$n" \
      --no-defaults --socket "$SANDBOX_SOCKET" --user root --progress none
    S[bs$n]=$(stored "bs-N$n")
    fresh "$WORK/restore"
    measure "bs${n}_restore" "$BS" restore latest --repo "s3://$BUCKET/bs-N$n" --s3-endpoint "$PROXY_URL" \
      --target-dir "$WORK/restore" --parallel "$n" --progress none --no-sync # in the page cache, as mbstream -x writes
    rm -rf "$WORK/restore"
  done

  rclone purge "direct:$BUCKET/rclone" 2>/dev/null || true
  fresh "$WORK/mbtmp"
  measure rclone_backup bash -o pipefail -c \
    '"$@" 2>"'"$WORK"'/mariabackup.log" | zstd -1 -q -T'"$PIPE_N"' | rclone rcat "proxy:'"$BUCKET/$KEY"'"' _ "${MB[@]}"
  S[rclone]=$(stored rclone)
  fresh "$WORK/restore"
  measure rclone_restore bash -o pipefail -c \
    'rclone cat "proxy:'"$BUCKET/$KEY"'" | zstd -dc -q | mbstream -x -p '"$PIPE_N"' -C "'"$WORK"'/restore"'
  rm -rf "$WORK/restore"
done

med() { median ${T[$1]}; }
reqs() { median ${R[$1]}; }

echo
echo "dataset: sysbench, $TABLES tables, datadir $(human "$datadir_size") (binlogs excluded); MinIO on loopback behind toxiproxy v2.5.0 $link (an HTTP request on a fresh connection took ${rtt}s); $(rclone version | head -1); $(nproc) cores; best (median) of $ROUNDS rounds; requests: median per run"
echo
row "pipeline" "backup s" "restore s" "backup requests" "restore requests" "stored" "backup time vs rclone" "restore time vs rclone"
row "---" "---:" "---:" "---:" "---:" "---:" "---:" "---:"
line() { # line LABEL KEY
  row "$1" "$(best "${2}_backup") ($(med "${2}_backup"))" "$(best "${2}_restore") ($(med "${2}_restore"))" \
    "$(reqs "${2}_backup")" "$(reqs "${2}_restore")" "$(human "${S[$2]}")" \
    "$(ratio "$(best "${2}_backup")" "$(best rclone_backup)")x" "$(ratio "$(best "${2}_restore")" "$(best rclone_restore)")x"
}
for n in "${NS[@]}"; do line "backstream --parallel $n (zstd:1)" "bs$n"; done
line "mariabackup --parallel $PIPE_N \| zstd -1 -T$PIPE_N \| rclone rcat; rclone cat \| zstd -dc \| mbstream -x -p $PIPE_N" rclone
echo
keys="bs1_backup bs1_restore bs4_backup bs4_restore rclone_backup rclone_restore"
echo "all runs (s): $(for k in $keys; do printf '%s:%s; ' "$k" "${T[$k]}"; done)"
echo "requests per run: $(for k in $keys; do printf '%s:%s; ' "$k" "${R[$k]}"; done)"
echo "last round, requests by S3 API and CPU time:"
for k in $keys; do echo "  $k: ${D[$k]}; ${C[$k]}"; done
verdict() { [ "$(echo "$1 <= $2" | bc -l)" = 1 ] && echo met || echo missed; }
b=$(ratio "$(best bs4_backup)" "$(best rclone_backup)")
r=$(ratio "$(best bs4_restore)" "$(best rclone_restore)")
echo "backstream N=4 / rclone pipeline: backup ${b}x (target <= 0.6x: $(verdict "$b" 0.6)), restore ${r}x (target <= 0.5x: $(verdict "$r" 0.5))"

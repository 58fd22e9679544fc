# Shared helpers for the benchmark scripts: a throwaway mariadbd on a free
# loopback port, timing, and table printing. Sourced, not run.

BENCH_OUT=${BENCH_OUT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/out}
mkdir -p "$BENCH_OUT"

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc -l | xargs printf '%.2f'; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }
size_of() { du -sb "$@" | awk '{s += $1} END {print s}'; }
human() { numfmt --to=iec-i --suffix=B --format='%.1f' "$1"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# sandbox_start DIR [extra mariadbd options...]: initialises DIR/data if
# needed and starts mariadbd on it; sets SANDBOX_SOCKET and SANDBOX_PID.
sandbox_start() {
  local dir=$1; shift
  mkdir -p "$dir/tmp"
  if [ ! -d "$dir/data/mysql" ]; then
    mariadb-install-db --no-defaults --user=root --datadir="$dir/data" --tmpdir="$dir/tmp" \
      --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
  fi
  SANDBOX_SOCKET=$dir/mysqld.sock
  local port; port=$(free_port)
  mariadbd --no-defaults --user=root --datadir="$dir/data" --tmpdir="$dir/tmp" --socket="$SANDBOX_SOCKET" \
    --port="$port" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$dir/error.log" \
    --pid-file="$dir/mysqld.pid" --log-bin=mariadb-bin --server-id=1 --binlog-format=ROW \
    --innodb-buffer-pool-size="${BUFFER_POOL:-1G}" --innodb-log-file-size=256M \
    --innodb-buffer-pool-load-at-startup=OFF --innodb-buffer-pool-dump-at-shutdown=OFF \
    --character-set-server=utf8mb4 "$@" &
  SANDBOX_PID=$!
  for _ in $(seq 1 120); do
    mariadb --no-defaults --socket="$SANDBOX_SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0
    kill -0 "$SANDBOX_PID" 2>/dev/null || { tail -20 "$dir/error.log" >&2; return 1; }
    sleep 0.5
  done
  echo "sandbox in $dir did not start" >&2
  return 1
}

sandbox_stop() {
  [ -n "${SANDBOX_PID:-}" ] || return 0
  kill "$SANDBOX_PID" 2>/dev/null || true
  wait "$SANDBOX_PID" 2>/dev/null || true
  SANDBOX_PID=
}

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# Row printing: a Markdown table, so the output pastes into docs/benchmarks.md.
row() { printf '| %s ' "$@"; printf '|\n'; }

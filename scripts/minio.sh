#!/usr/bin/env bash
# Installs and starts MinIO, the S3 server backstream's tests and benchmarks
# run against.
#
#   scripts/minio.sh install      build the pinned MinIO with `go install` if it is missing
#   scripts/minio.sh path         print the path of the pinned MinIO (installing it if missing)
#   scripts/minio.sh start DIR    start one on free loopback ports with data in DIR/data
#   scripts/minio.sh stop DIR     stop the one started in DIR
#
# start writes DIR/minio.env (mode 0600) with shell exports of the endpoint
# and credentials, and prints those exports on stdout when stdout is not a
# terminal, so that  eval "$(scripts/minio.sh start DIR)"  sets them up.
# Credentials are MINIO_ROOT_USER and MINIO_ROOT_PASSWORD from the
# environment, or random ones; they are never shown on a terminal.
set -euo pipefail

# The MinIO release the project is tested with. internal/storage/s3/s3test
# names the same version (PinnedMinio; a test keeps the two equal).
MINIO_MODULE=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_VERSION=${MINIO_MODULE#*@}

say() { echo "minio.sh: $*" >&2; }
die() { say "$*"; exit 1; }

gobin() {
  local bin
  bin=$(go env GOBIN)
  [ -n "$bin" ] || bin="$(go env GOPATH)/bin"
  echo "$bin"
}

# The build is kept outside the checkout, keyed by its version, so that a
# fresh clone on a machine that built it once does not build it again (a
# build takes minutes), and a change of the pinned version builds anew.
cache_dir() {
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/backstream-minio/$MINIO_VERSION"
}

# built_version prints the module version a minio binary was built from.
built_version() {
  go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/minio/minio" { print $3 }'
}

# find_minio prints the path of the pinned minio: the cache, else one on
# PATH or in Go's bin dir built from the pinned version (an earlier
# install's, which is then kept in the cache).
find_minio() {
  local cached
  cached="$(cache_dir)/minio"
  if [ -x "$cached" ]; then
    echo "$cached"
    return 0
  fi
  local candidate
  for candidate in "$(command -v minio 2>/dev/null || true)" "$( (command -v go >/dev/null 2>&1 && echo "$(gobin)/minio") || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && [ "$(built_version "$candidate")" = "$MINIO_VERSION" ]; then
      mkdir -p "$(cache_dir)"
      cp "$candidate" "$cached.tmp" && mv "$cached.tmp" "$cached"
      echo "$cached"
      return 0
    fi
  done
  return 1
}

install_minio() {
  if path=$(find_minio); then
    say "MinIO $MINIO_VERSION is installed: $path"
    return 0
  fi
  command -v go >/dev/null 2>&1 || die "Go is not installed; it is needed to build MinIO"
  local dir
  dir=$(cache_dir)
  say "MinIO is missing: building $MINIO_MODULE into $dir"
  say "this downloads and compiles a few hundred modules and takes about 5 minutes on 2 cores (once per machine and version); progress follows"
  local start=$SECONDS
  mkdir -p "$dir"
  # -x would drown the user; a line per module downloaded, and a heartbeat
  # while compiling, show that something is happening.
  GOBIN=$dir go install "$MINIO_MODULE" 2>&1 | while IFS= read -r line; do say "$line"; done &
  local pid=$!
  local last=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - last)) -ge 30 ] && kill -0 "$pid" 2>/dev/null; then
      say "still building MinIO ($((SECONDS - start))s so far)"
      last=$SECONDS
    fi
  done
  wait "$pid" || true
  path=$(find_minio) || die "go install $MINIO_MODULE failed (see above)"
  say "installed $path in $((SECONDS - start))s"
}

# free_port prints a loopback TCP port nobody listens on.
free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 40000))
    if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  die "found no free port"
}

random_secret() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

start_minio() {
  local dir=$1
  install_minio
  local minio
  minio=$(find_minio)
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/minio.pid" ] && kill -0 "$(cat "$dir/minio.pid")" 2>/dev/null; then
    die "a MinIO already runs for $dir (pid $(cat "$dir/minio.pid")); stop it first"
  fi
  local port console user pass
  port=$(free_port)
  console=$(free_port)
  [ "$console" != "$port" ] || console=$(free_port)
  user=${MINIO_ROOT_USER:-bs$(random_secret 6)}
  pass=${MINIO_ROOT_PASSWORD:-$(random_secret 20)}
  MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$pass MINIO_BROWSER=off \
    nohup "$minio" server "$dir/data" --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
    >"$dir/minio.log" 2>&1 </dev/null &
  echo $! >"$dir/minio.pid"
  local i
  for i in $(seq 1 300); do
    if curl -sf -o /dev/null "http://127.0.0.1:$port/minio/health/ready"; then
      break
    fi
    kill -0 "$(cat "$dir/minio.pid")" 2>/dev/null || die "MinIO exited at start; see $dir/minio.log"
    sleep 0.1
  done
  [ "$i" -lt 300 ] || die "MinIO did not become ready in 30s; see $dir/minio.log"
  (
    umask 077
    cat >"$dir/minio.env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=$user
export AWS_SECRET_ACCESS_KEY=$pass
export AWS_REGION=us-east-1
EOF
  )
  say "MinIO (pid $(cat "$dir/minio.pid")) serves http://127.0.0.1:$port with data in $dir/data; log in $dir/minio.log"
  if [ -t 1 ]; then
    say "run:  . $dir/minio.env   (it holds the credentials)"
  else
    cat "$dir/minio.env"
  fi
}

stop_minio() {
  local dir=$1
  [ -f "$dir/minio.pid" ] || die "no MinIO was started in $dir"
  local pid
  pid=$(cat "$dir/minio.pid")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$dir/minio.pid"
  say "stopped MinIO of $dir"
}

case "${1:-}" in
  install) install_minio ;;
  path)
    install_minio
    find_minio
    ;;
  start)
    [ $# -eq 2 ] || die "usage: $0 start DIR"
    start_minio "$2"
    ;;
  stop)
    [ $# -eq 2 ] || die "usage: $0 stop DIR"
    stop_minio "$2"
    ;;
  *) die "usage: $0 install | path | start DIR | stop DIR" ;;
esac

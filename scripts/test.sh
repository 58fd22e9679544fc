#!/usr/bin/env bash
# Runs backstream's whole test suite: formatting, vet, staticcheck, and every
# test (with the race detector but for the end-to-end tests of packages that
# start no goroutine, see below), against real sandbox MariaDB servers, the
# real mariabackup and mbstream, and a real MinIO (each installed if missing:
# the packages first, MinIO built beside the tests, whose S3 tests wait
# for it). Extra arguments go to go test. In CI (CI=true) or with FUZZ=1 it
# also runs every fuzz target, beside the rest at the lowest CPU priority:
# the parsers of what a network peer sends and of what a repository holds
# for FUZZTIME (3s) each, the others for FUZZTIME_OTHER (1s). At the end
# it prints how long each step and each package took.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every go command of the run (go test, the tests' own go build, vet,
# staticcheck's go list, the fuzzers' builds) builds with -trimpath, so
# that a clone at a new path (CI's clean clone) reuses the build cache an
# earlier clone on the machine filled: without it Go keys the project's
# own packages by their directory, and each clone compiled them again in
# the race, plain and fuzzing configurations and linked every test binary
# anew (the compiler and linker were 16% of a cached run's CPU).
export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"

start=$SECONDS
log=$(mktemp -d "${TMPDIR:-/tmp}/backstream-test.XXXXXX")
trap 'rm -rf "$log"' EXIT
steps=()
step() { # step NAME SECONDS
  steps+=("$(printf '%-28s %5ds' "$1" "$2")")
}

# Fuzzing of every fuzz target, a few seconds each, in CI or when FUZZ=1.
# It runs beside the installs and go test, at the lowest CPU priority:
# the end-to-end tests mostly wait on servers, mariabackup and MinIO, and
# the installs on the network and the package manager, so the fuzzers
# take the CPU they leave idle instead of a step of their own after them
# (3 to 4 minutes on 2 cores), and never slow a test down by more than
# the scheduler's share of a niced process. The fuzz time of each target
# is wall-clock time, as before.
#
# First, for FUZZTIME (3s) each, the parsers of what a network peer sends
# (the transport's framing and handshake, the remote protocol's messages)
# and of what a repository holds, which whoever can write to it controls
# (manifests, frame indexes, xbstream chunks, archived binary logs and
# their segments, the block store's index objects and recipes); then every other package's targets (codecs, catalogs,
# option files, locks, ...) for FUZZTIME_OTHER (1s) each. go test fuzzes
# one target per run and links a test binary for each run, so each
# package's fuzzing-instrumented test binary is built once (go test -c
# -fuzz) and fuzzes its targets one after the other, run as go test runs
# it: in the package's directory, so that a failure leaves its input under
# the package's testdata/fuzz, with go test's fuzz cache and timeout.
fuzz_all() {
  local t=$SECONDS status=0 fuzzed=0
  fuzzcache=$(go env GOCACHE)/fuzz
  module=$(go list -m)
  hostile=(./internal/transport ./internal/remote ./internal/archive ./internal/xbstream ./internal/binlog ./internal/dedup)
  others=()
  for dir in $(grep -rl --include='*_test.go' '^func Fuzz' internal | xargs -n1 dirname | sort -u); do
    case " ${hostile[*]} " in *" ./$dir "*) ;; *) others+=("./$dir") ;; esac
  done
  mkdir -p "$log/fuzzbin"
  for pkg in "${hostile[@]}" "${others[@]}"; do
    fuzztime=${FUZZTIME:-3s}
    case " ${others[*]} " in *" $pkg "*) fuzztime=${FUZZTIME_OTHER:-1s} ;; esac
    bin=$log/fuzzbin/$(echo "${pkg#./}" | tr / _).test
    if ! go test -c -fuzz . -o "$bin" "$pkg" >"$log/fuzz.out" 2>&1; then
      cat "$log/fuzz.out" >&2
      echo "test.sh: building the fuzzing test binary of $pkg failed" >&2
      status=1
      continue
    fi
    # Every fuzz target the package has, so that a new one is fuzzed too.
    targets=$(cd "$pkg" && "$bin" -test.list '^Fuzz') || {
      echo "test.sh: listing the fuzz targets of $pkg failed: $targets" >&2
      status=1
      continue
    }
    for target in $(echo "$targets" | grep '^Fuzz'); do
      fuzz() {
        (cd "$pkg" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" \
          -test.fuzzcachedir "$fuzzcache/$module/${pkg#./}" -test.timeout 10m -test.paniconexit0) >"$log/fuzz.out" 2>&1
      }
      ok=1
      fuzz || ok=0
      # A short fuzzing run sometimes ends with "context deadline
      # exceeded" and no failing input (an input still running, or being
      # minimized, when the time is up): that says nothing of the target,
      # so it is run once more. A real failure writes its input.
      if [ "$ok" = 0 ] && grep -q 'context deadline exceeded' "$log/fuzz.out" && ! grep -q 'Failing input written' "$log/fuzz.out"; then
        echo "test.sh: fuzzing $target in $pkg ran out of time without a failing input; running it again" >&2
        ok=1
        fuzz || ok=0
      fi
      if [ "$ok" = 0 ]; then
        cat "$log/fuzz.out" >&2
        echo "test.sh: fuzzing $target in $pkg failed" >&2
        status=1
      fi
      fuzzed=$((fuzzed + 1))
    done
  done
  echo "fuzzed $fuzzed parsers in $((SECONDS - t))s"
  return "$status"
}

# The tests' temporary directories (sandbox datadirs, repositories,
# restore targets) go on tmpfs when /dev/shm has room (8 GiB free): a
# suite creates hundreds of thousands of files, and on ext4 after many
# deletes each creation scans for a free inode (a profile of internal/cli
# found a fifth of its CPU time there). MariaDB's own test runner does
# the same (mtr --mem). The few tests that check what reaches the disk
# (dirty pages after a sync) write under $BACKSTREAM_DISK_TMPDIR, the
# TMPDIR the suite was started with (testkit.DiskTempDir).
disktmp=${TMPDIR:-/tmp}
memtmp=
# A run that was killed (SIGKILL, a lost machine session) could not remove
# its directory, and tmpfs is memory: each run holds a lock on its own
# directory for as long as it or anything it started lives (the
# descriptor is inherited), so a directory whose lock is free is a dead
# run's, and goes (one untouched for a minute: a run just starting may
# not hold its lock yet).
for old in $(find /dev/shm -maxdepth 1 -name 'bs.*' -type d -mmin +1 2>/dev/null); do
  [ -f "$old/.test.sh.lock" ] || continue
  if flock -n "$old/.test.sh.lock" true 2>/dev/null; then
    echo "test.sh: removing $old, left by a run that was killed" >&2
    rm -rf "$old"
  fi
done
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
  [ "$(df -k --output=avail /dev/shm | tail -1)" -ge $((8 << 20)) ]; then
  memtmp=$(mktemp -d /dev/shm/bs.XXXXXX)
  exec {memlock}>"$memtmp/.test.sh.lock"
  flock -n "$memlock"
  # As /tmp: tests run programs as other users (nobody) from here.
  chmod 1777 "$memtmp"
  trap 'rm -rf "$log" "$memtmp"' EXIT
  export TMPDIR=$memtmp BACKSTREAM_DISK_TMPDIR=$disktmp
fi

# The fuzzing starts first, so that on a fresh machine it also takes the
# CPU the installs leave idle while they wait on the network. It runs in
# a process group of its own, which an early exit stops with it.
fuzzstart=$SECONDS
fuzzing=0
if [ "${CI:-}" = true ] || [ "${FUZZ:-}" = 1 ]; then
  fuzzing=1
  setsid nice -n 19 bash -c "$(declare -f fuzz_all); log=$(printf %q "$log"); fuzz_all" >"$log/fuzz" 2>&1 & fuzzjob=$!
  # (Before setsid has run, the group does not exist yet: then the one
  # process is all there is to stop.)
  # (set -e holds in the trap too: a kill that finds nothing left to stop
  # must not end it before the removal.)
  trap '{ kill -- -"$fuzzjob" || kill "$fuzzjob" || true; } 2>/dev/null; rm -rf "$log" ${memtmp:+"$memtmp"}' EXIT
fi

# The installs are independent, and mostly wait on the network and the
# package manager, so they run side by side: MinIO's build (minutes on a
# fresh machine) overlaps the Debian packages and staticcheck, and the
# tests (below).
#
# gofmt, vet and staticcheck run beside the tests rather than in a step
# of their own before them, at a lower CPU priority (nice 10): vet and
# staticcheck of a fresh clone take CPU the tests leave idle while they
# wait on servers, and have the whole of go test's time to finish. On a
# fresh machine they start after the Debian packages, beside MinIO's
# build, which at the same priority they slowed from about 270 s to
# 615. A lint failure fails the run, once the tests are over.
bindir=$(go env GOBIN); bindir=${bindir:-$(go env GOPATH)/bin}
staticcheck=$bindir/staticcheck
install_staticcheck() {
  # Pinned, so that a new release cannot fail an unchanged tree.
  if ! "$staticcheck" -version 2>/dev/null | grep -qF '(0.8.2)'; then
    go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
  fi
}
lint() {
  local t=$SECONDS unformatted
  unformatted=$(gofmt -l cmd internal contrib)
  if [ -n "$unformatted" ]; then
    echo "gofmt would change:"
    echo "$unformatted"
    return 1
  fi
  go vet ./... && "$staticcheck" ./... || return 1
  echo "$((SECONDS - t))" >"$log/lint.seconds"
}
t=$SECONDS
# The other MariaDB versions wait for deps.sh, which installs debootstrap:
# two package installs at once would fight over the package manager's lock.
(./scripts/deps.sh && ./scripts/versions.sh install) >"$log/deps" 2>&1 & deps=$!
# MinIO's build (minutes on a fresh machine; nothing to do once built)
# runs beside the tests as well as the installs: only the tests that
# store in S3 need it, and they wait for it. It holds an exclusive lock
# on a file until it ends (the one descriptor, inherited: this shell
# closes its own), and s3test waits for that lock when
# $BACKSTREAM_MINIO_INSTALLING names the file.
exec {miniolock}>"$log/minio.lock"
flock "$miniolock"
(
  t=$SECONDS
  ./scripts/minio.sh install >"$log/minio" 2>&1
  echo "$((SECONDS - t))" >"$log/minio.seconds"
) & minio=$!
exec {miniolock}>&-
export BACKSTREAM_MINIO_INSTALLING=$log/minio.lock
install_staticcheck >"$log/staticcheck" 2>&1 & sc=$!
# beside_result NAME PID STEP WHAT waits for the job PID run beside the
# rest, whose output is $log/NAME and which wrote its time into
# $log/NAME.seconds, and records it as STEP; when the job failed, it
# prints its output and "WHAT failed", and fails.
beside_result() {
  local status=0
  wait "$2" || status=$?
  if [ "$status" -ne 0 ]; then
    cat "$log/$1" >&2
    echo "test.sh: $4 failed" >&2
    return 1
  fi
  step "$3" "$(cat "$log/$1.seconds")"
}
minio_result() { beside_result minio "$minio" "MinIO (beside the rest)" "installing minio"; }
failed=0
for job in "deps:$deps" "staticcheck:$sc"; do
  if ! wait "${job#*:}"; then
    echo "test.sh: installing ${job%%:*} failed:" >&2
    failed=1
  fi
  cat "$log/${job%%:*}" >&2
done
if [ "$failed" -ne 0 ]; then
  minio_result || true
  exit 1
fi
step "installs" $((SECONDS - t))
(renice -n 10 "$BASHPID" >/dev/null && lint) >"$log/lint" 2>&1 & lintjob=$!
lint_result() { beside_result lint "$lintjob" "lint (beside the rest)" "gofmt, vet or staticcheck"; }

# The race detector runs on the tests of every package whose code starts
# goroutines: the pipelines' streams, cancellation, retries and holds are
# where a race would hide, and those packages' own tests (the engines',
# the archive's, the storage backends' and decorators', the transport's,
# remote's, binlog's) drive them, many against real servers, mariabackup
# and MinIO. It is off for the end-to-end tests of the packages listed
# here, which start no goroutine of their own (TestRaceFreePackagesStart-
# NoGoroutine in cmd/backstream holds them to it; one that starts to
# leaves the list): they orchestrate what the packages below run, mostly
# waiting on servers, and the detector cost 42% of their CPU (internal/
# backup alone: 234 CPU-seconds with it, 136 without), the largest share
# of the suite's.
#
# go test starts the packages in the order given, as -p lets it: the
# Galera cluster's test first (two minutes, mostly waiting on the
# cluster), then the longest.
norace="./contrib/galera ./internal/backup ./internal/cli ./internal/growth ./internal/restorecase ./internal/provision ./internal/merge ./internal/retention ./internal/servercopy ./internal/verify ./contrib/systemd"
module=$(go list -m)
race=$(go list ./... | grep -vxF -f <(for p in $norace; do echo "$module/${p#./}"; done))

# Most tests wait on servers, mariabackup and MinIO rather than compute, so
# more of them run at once than there are cores: packages (-p) and the
# parallel tests inside a package (-parallel), in both runs at once; the
# end-to-end tests, which wait most, eight at a time in a package.
t=$SECONDS
set +e
# shellcheck disable=SC2086 # package lists
go test -race -timeout 25m -count=1 -p 3 -parallel 4 $race "$@" 2>&1 | tee "$log/test.race" & racejob=$!
# shellcheck disable=SC2086
go test -timeout 25m -count=1 -p 3 -parallel 8 $norace "$@" 2>&1 | tee "$log/test"
status=${PIPESTATUS[0]}
racestatus=0
wait "$racejob" || racestatus=$?
cat "$log/test.race" >>"$log/test"
[ "$racestatus" -eq 0 ] || status=1
set -e
step "go test" $((SECONDS - t))
minio_result || status=1
lint_result || status=1
if [ "$fuzzing" = 1 ]; then
  fuzzstatus=0
  wait "$fuzzjob" || fuzzstatus=$?
  cat "$log/fuzz"
  [ "$fuzzstatus" -eq 0 ] || status=1
  step "fuzz (beside the rest)" $((SECONDS - fuzzstart))
fi

echo
echo "time per step:"
printf '  %s\n' "${steps[@]}"
printf '  %-28s %5ds\n' "total" $((SECONDS - start))
echo "time per package (slowest first):"
grep -E '^(ok|FAIL|---)[[:space:]]' "$log/test" | grep -vE '^--- ' |
  awk '{ t = $NF; sub(/s$/, "", t); if (t ~ /^[0-9.]+$/) printf "  %8.1fs  %s %s\n", t, $1, $2; else printf "  %9s  %s %s\n", "-", $1, $2 }' |
  sort -rn || true
exit "$status"

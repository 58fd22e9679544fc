#!/usr/bin/env bash
# Installs what backstream's demo, tests and benchmarks need and this machine
# lacks, from Debian's packages. Safe to run again: it installs nothing that is
# already there. Pass extra package names to install them too (bench uses this).
set -euo pipefail

need=()
want() { # want BINARY PACKAGE
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || need+=("$2")
}
want mariadbd mariadb-server-core
want mariadb-install-db mariadb-server-core
want mariadb mariadb-client-core
want mariadb-binlog mariadb-client   # binlog archiving and point-in-time replay
want mariabackup mariadb-backup
want mbstream mariadb-backup
want zstd zstd
want lz4 lz4
want gzip gzip
want age age          # the stock-tool way out of an encrypted backup (tests)
want openssl openssl  # a key file encrypted as file_key_management reads it (tests)
want gcc gcc          # cgo: zstd is the reference C library, built in
want promtool prometheus  # promtool check metrics: the --metrics-file tests
want systemd-analyze systemd  # systemd-analyze verify: the contrib/systemd units' test
want socat socat      # wsrep_sst_mariabackup's transport (bench/sst.sh compares against it)
want ip iproute2      # the veth pair bench/sst.sh shapes to 1 Gbit/s
want tc iproute2
want my_print_defaults mariadb-client-core  # the stock SST scripts read [sst] with it
want debootstrap debootstrap  # scripts/versions.sh: the other MariaDB versions, each in a Debian root of its own
want mkfs.ext4 e2fsprogs   # the file system a test cuts the power of (testkit.PowerCut)
want losetup mount         # its loop device
want eatmydata eatmydata  # libeatmydata: mariabackup --prepare without its own syncs (restore syncs once, at the end)
# Galera: the provider the cluster tests load. The stock SST scripts
# (wsrep_sst_mariabackup, which bench/sst.sh compares against) come with
# mariadb-server, which also starts a system server: bench/sst.sh asks
# for it by name (scripts/deps.sh mariadb-server) rather than every run.
[ -e /usr/lib/galera/libgalera_smm.so ] || need+=(galera-4)
[ -e /usr/include/stdlib.h ] || need+=(libc6-dev)
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done

if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go is not installed (backstream needs Go 1.26.8 or newer on PATH, as go.mod says)" >&2
  exit 1
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#need[@]} -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  echo "deps: installing ${need[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# The account a restore as root gives the datadir to (tests of the ownership
# step). mariadb-server creates it; mariadb-server-core, which is all the
# tests need of the server, does not, and mariadb-server would also start a
# system server.
if ! id mysql >/dev/null 2>&1; then
  echo "deps: creating the system user mysql"
  $sudo useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin mysql
fi

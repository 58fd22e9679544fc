package options

import (
	"slices"
	"strings"
)

// Command is one command's documentation as its help shows it.
type Command struct {
	// Use is the usage line: the command's name, then what it takes.
	Use     string
	Short   string // the one line the command list shows
	Long    string
	Example string
}

// Name is the command's name, the first word of Use.
func (c Command) Name() string { return strings.Fields(c.Use)[0] }

// commands is every command's documentation: Root's, then the others' by
// name.
var commands = []Command{
	{Use: "backstream",
		Short: "Fast, verified backup and restore for MariaDB",
		Long: `backstream takes hot physical backups of MariaDB through mariabackup's stream,
compresses and hashes them in parallel, and writes them as parallel streams into a
repository. Restores read the streams in parallel and verify every byte.`},
	{Use: "backup",
		Short: "Take a hot physical backup, or with --logical a consistent dump, into a repository",
		Long: `backup runs mariabackup --backup --stream=xbstream on this host, splits its stream into
--parallel stream objects of independently compressed frames, hashes everything, and
commits the backup by writing its manifest last, into a repository made with init (a
location without one is refused, so a mistyped --repo creates nothing). Credentials reach mariabackup through a private 0600 option file,
never its command line.

With --logical it dumps tables instead, through --parallel connections that all see one
snapshot (opened while commits are blocked for a moment), cutting big tables into
key ranges so that every connection stays busy, plus every view, trigger, routine,
event, sequence and (for a whole-server dump, or with --users) account and grant.
DDL on a dumped table during the dump fails the backup unless --block-ddl holds it off.
--mask db.table.column=FUNCTION (hash, email, phone, fixed:VALUE, null; repeatable)
replaces a column's values as rows are dumped, so that the repository never holds them;
--mask-key-file keys hash, email and phone, so that every run gives the same stand-ins.

--max-rate bounds the bytes per second taken from the source, and --max-io (physical)
mariabackup's I/O operations per second, so that a backup leaves the server room.`,
		Example: `  backstream backup --repo /backups --parallel 4
  backstream backup --defaults-extra-file /etc/backstream/db1.cnf --incremental --full-every 6d12h
  backstream backup --repo s3://bucket/db1 --encrypt --recipient-file backup.pub
  backstream backup --repo /backups --logical --databases shop,crm
  backstream backup --repo /backups --logical --database shop --mask shop.customers.email=email --mask shop.orders.email=email --mask-key-file /etc/backstream/mask.key`},
	{Use: "binlog",
		Short: "Archive the server's binary logs into the repository",
		Long: `binlog copies the server's binary log files into the repository through the
replication protocol (mariadb-binlog --read-from-remote-server --raw), so it runs on any
host that can connect, with an account that has REPLICATION SLAVE and BINLOG MONITOR.
Every closed file the repository lacks is stored compressed and checksummed under
binlogs/<host>-<server_id>/<file>/, with an index of its first and last GTID and event
time; list --binlogs shows what is covered. It resumes where the repository stops.

With --encrypt (to --recipient-file, or a passphrase from --passphrase-file or
$BACKSTREAM_PASSPHRASE) each file's stream object and index are stored encrypted with
age, as a backup's are; a point-in-time restore then needs the key.

With --follow it keeps streaming the active file, archives each file once the server
moves to the next, and reconnects when the server restarts; stop it with Ctrl-C.
Meanwhile the active file's new transactions are stored as segments at least every
--flush-interval (default 1s), cut only between transactions, so a restore loses at
most about that much; a file's segments are removed once it is archived whole.

It checks the server's settings first and refuses what cannot be archived
(log_bin OFF, a server that is not MariaDB), naming the setting. If files were
purged on the server before they were archived (or its server_id changed), the
gap is recorded in the repository (list --binlogs shows it) and binlog exits
non-zero naming the files; --allow-gap records it and archives on. A server
whose binary log holds the last archived transaction of another (a replica
promoted after a failover, with log_slave_updates) continues that archive:
its first run records the link, with no gap, and a point-in-time restore
goes on from the one into the other.

With --follow, --progress json (and plain) show its lag: lag_seconds and
lag_bytes behind the server; list --binlogs shows the last measure.`,
		Example: `  backstream binlog --repo /backups               # archive what the server has, once
  backstream binlog --repo /backups --follow      # and keep archiving as it writes (a service)`},
	{Use: "cat [ID|latest]",
		Short: "Write a backup as one plain xbstream to stdout (for mbstream -x)",
		Long: `cat verifies and decodes a backup and writes it as a single xbstream to standard
output, the way out to stock tools:  backstream cat latest --repo R | mbstream -x -C DIR`,
		Example: `  backstream cat latest --repo /backups | mbstream -x -C /var/lib/mysql.new
  backstream cat 20261121T190512Z-7f3a --repo /backups > backup.xbstream`},
	{Use: "check",
		Short: "Exit non-zero with a one-line reason when the newest backup is too old, a chain is broken or the binary logs lag",
		Long: `check judges a repository for monitoring (a Nagios-style check, a systemd unit
with OnFailure=): it exits 0 and prints one line beginning "OK:" when all is well,
and otherwise exits non-zero and prints one line on stderr that names every problem:

  - the newest complete whole-server backup finished longer ago than --max-age (or
    there is none): the newest physical one if the repository has any, else the
    newest logical one, or with --kind the newest of that kind; a logical backup of
    some databases or tables never counts;
  - a backup cannot be restored: its manifest is damaged, an object its manifest
    names is missing, or the last verify of it found damage;
  - a chain of incrementals is broken: an incremental's parent is missing or cannot
    be restored;
  - an archived binary log file or segment is missing (a file between two archived
    ones, or the newest ones the source's head object names, or the head itself):
    a point-in-time restore cannot reach past it;
  - with --max-restore-test-age, no backup passed a restore test (verify
    --restore-test records when one did in the repository) within that long;
  - with --max-binlog-lag, a server's archived binary log was last known to hold all
    the server had written longer ago than that (see binlogs/<source>/status.json).

Exit codes: 0 healthy; 1 a problem (too old, a chain broken by a missing backup,
binary logs lagging, no recent restore test) or the repository could not be read;
3 damage (a damaged manifest, a missing object or archived binary log, damage verify
found, a chain broken at one of these); 2 bad flags. check reads the catalog only and takes no lock: it runs
while a backup does.`,
		Example: `  backstream check --repo /backups --max-age 26h
  backstream check --repo s3://bucket/db1 --max-age 26h --max-binlog-lag 60s`},
	{Use: "config COMMAND [flags]",
		Short: "Show the options a command would run with, and where each comes from",
		Long: `config prints every option of COMMAND with the value it would take and its source: the
command line, an option file (file:line [group]), an environment variable, or the default.
Secrets are masked. Every long option can be set in the option files the mariadb client
reads (/etc/my.cnf, /etc/mysql/my.cnf, ~/.my.cnf, --defaults-extra-file, or only
--defaults-file): in [backstream] for every command, in [backstream-COMMAND] for one, and
with --defaults-group-suffix=_S also in [backstream_S] and [backstream-COMMAND_S].`,
		Example: `  backstream config backup
  backstream config backup --defaults-group-suffix=_prod
  backstream config restore --defaults-extra-file /etc/backstream/prod.cnf`},
	{Use: "copy --from SOURCE --to TARGET",
		Short: "Copy databases from one server into another, with no staging on disk",
		Long: `copy takes one consistent dump of the source, through --parallel connections that all see
one snapshot (as backup --logical takes it), and loads its data files into the target as
they are made, through --parallel connections (as a logical restore loads them): tables
without their secondary indexes first, then the indexes and foreign keys, sequences,
views, triggers, routines and events; accounts only with --users. Nothing is staged on
disk: a full load queue holds the dump back, so memory stays near (3 x --parallel) x
--chunk-size.

Before anything changes, copy names both servers on stderr and refuses: a target that is
the source itself, a target older than the source's MariaDB major version, tables the
target has (--drop-existing drops them), and an unfinished copy on the target.

An interrupted copy (Ctrl-C, a lost connection, a killed process) continues with --resume:
it takes a new snapshot, keeps each table the earlier run loaded whole only if the new
snapshot holds exactly its rows on the source and the target still does (same row count
and row sum), and loads everything else again. The target then holds the source's tables
as of the new snapshot.

The source's binary log position at the snapshot (GTID, file and offset) is printed and
recorded on the target (table backstream_load.copies); --replicate then makes the target
replicate from the source from there, with the replication account of the
[backstream-primary] group (--primary-defaults-file) and the source's --from host and port
unless --primary-host says how the target reaches it. --replicate copies the whole server.

The source's connection options come from --from-defaults-file (its [client] and
[backstream] groups), else the option files the global flags choose, and its password
also from $BACKSTREAM_FROM_PASSWORD; the target's likewise from --to-defaults-file and
$BACKSTREAM_TO_PASSWORD. No password is taken as a flag.`,
		Example: `  backstream copy --from db1.example.com --to /run/mysqld/mysqld.sock --from-defaults-file /etc/backstream/db1.cnf
  backstream copy --from db1:3306 --to db2:3306 --database shop --rename-database shop:shop_staging --parallel 4
  backstream copy --from db1 --to db2 --resume                                    # after an interrupted copy
  backstream copy --from db1 --to db2 --replicate --primary-defaults-file /etc/backstream/repl.cnf`},
	{Use: "demo",
		Short: "Back up and restore a throwaway sandbox server, and check the result",
		Long: `demo starts a throwaway MariaDB server (mariadbd from this host, in a temp dir, on a
free loopback port) with sample data, backs it up into a temp repository, restores and
prepares it into a new datadir, starts a second server on that, and compares CHECKSUM
TABLE of every table. It touches no existing server.`,
		Example: "  backstream demo"},
	{Use: "expire --keep-last N | --keep-within D | --keep-daily N | --keep-weekly N | --keep-monthly N | --keep-yearly N ... [--confirm]",
		Short: "Delete old backups by a retention policy (a dry run unless --confirm)",
		Long: `expire decides for every complete backup whether the policy keeps it and prints the plan:
a backup is kept if any rule keeps it, and the newest backup of each kind is always kept.
The rules apply to physical and logical backups apart (--keep-last 7 keeps the newest 7
of each), or with --kind to that kind only, keeping the others. They
count backups by their start time in UTC: --keep-last N the newest N, --keep-within D
those started within D (14d, 36h, 2w), --keep-daily N, --keep-weekly N, --keep-monthly N
and --keep-yearly N the newest backup of each of the last N calendar days, ISO weeks,
calendar months or years that have one. Nothing is
deleted without --confirm; each deletion removes the manifest first.
--prune-incomplete also removes the leftovers of failed or crashed backups (directories
without a manifest), and what writes that never finished left anywhere under backups/:
the temporary files of a local repository (a backup killed with SIGKILL leaves its
streams' behind) and the incomplete multipart uploads an S3 server keeps. expire holds the exclusive repository lock, so no backup that could still commit
is running while it works: a writer whose lock goes stale stops itself.`,
		Example: `  backstream expire --repo /backups --keep-daily 7 --keep-weekly 5 --keep-monthly 12          # the plan, deleting nothing
  backstream expire --repo /backups --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --confirm
  backstream expire --repo /backups --keep-pitr 7d --prune-incomplete --confirm`},
	{Use: "init --repo LOCATION",
		Short: "Create a repository",
		Long: `init creates an empty repository at --repo: a directory (created if absent, or empty) or
an S3 prefix that holds no objects. It is the only command that creates one: backup,
binlog and receive --repo refuse a location without a repository, so that a mistyped
--repo fails instead of scattering backups. A location that already holds a repository,
or other objects, is refused.

With --encrypt the repository gets its own encryption: every backup, archived binary log
and received backup written into it is encrypted (age) to the keys given here, with no
key flag: to --recipient-file's public keys, or to a repository key made now and stored
encrypted with the passphrase (--passphrase-file or $BACKSTREAM_PASSPHRASE). The hosts
that write then hold no secret; reading needs --identity-file or the passphrase. Such a
repository has format 2, which older backstreams refuse rather than write into it plainly.
Without --encrypt, encryption is chosen per backup (backup --encrypt).`,
		Example: `  backstream init --repo /backups
  backstream init --repo s3://bucket/prod/db1 --encrypt --recipient-file /etc/backstream/backup.pub
  backstream init --repo /backups --encrypt --passphrase-file /root/backstream.pass`},
	{Use: "list",
		Short: "List the complete backups of a repository",
		Long: `list prints a table of the complete backups of a repository: each one's id, its kind
(with +N for an incremental's depth, merged, partial, or BROKEN when the catalog and the
last verify show that it cannot be restored), when it started, how long it took, its size,
stored size and ratio, the server's version and its binary log position; then what each
logical backup holds. A backup whose manifest is damaged is listed as DAMAGED, with the
reason on stderr. --kind lists one kind only, and --json prints the list for programs.

--binlogs lists the archived binary logs instead, with the gaps between them; --status
only each server's recoverable window, its lag and its gaps.`,
		Example: `  backstream list --repo /backups
  backstream list --repo /backups --json
  backstream list --repo /backups --binlogs`},
	{Use: "merge [ID|latest]",
		Short: "Build a full backup from an incremental chain, without touching the server",
		Long: `merge restores the chain that ends at the named incremental (the newest backup by
default) into a work directory, prepares it, and stores the prepared datadir in the
repository as a new full backup of the chain's end: the same positions (LSNs, binary log,
GTID), the same finishing time, and merged_from naming the chain. Restoring it reads one
backup instead of the chain; incrementals can build on it; the chain's links stay until
expire drops them. The source server is not contacted.

The chain is prepared in a new subdirectory of --work-dir (default: under $TMPDIR),
which needs the space of the restored datadir and is removed at the end.
An encrypted chain is merged only with --encrypt, so that the new backup is too.`,
		Example: "  backstream merge latest --repo /backups     # a full backup from the newest chain"},
	{Use: "provision [ID|latest --repo R] --to HOST:PORT [--to HOST:PORT ...]",
		Short: "Make new replicas of this server: send to receivers that restore, start and replicate",
		Long: `provision is send for new replicas: every receiver (started with backstream receive
--datadir DIR --start --replicate) restores the backup into place as it arrives, starts the
server, checks it and points it at its primary from the backup's position before it
answers; provision prints what each one reported and fails unless every one replicates.

Run on a replica, the backup also records where the replica stood in its primary's
history (mariabackup --slave-info), and a receiver pointed at that primary starts there:
new replicas of the primary are made without loading it.`,
		Example: `  backstream provision --to replica1:4444 --to replica2:4444 --token-file /etc/backstream/token
  backstream provision --from 127.0.0.1:3306 --to replica1:4444 --replicate --token-file /etc/backstream/token`},
	{Use: "receive --listen ADDR (--target-dir DIR [--prepare] | --datadir DIR [--start] | --repo DIR)",
		Short: "Take a backup streamed by send: restore it as it arrives, or store it in a repository",
		Long: `receive listens for one transfer from backstream send. With --target-dir it restores the
backup into that (empty) directory as it arrives, verifying every byte, and with
--prepare prepares it; with --repo it stores the backup in a repository on this host,
verified, and commits it. It exits 0 only if the whole backup arrived and verified;
--keep-listening serves one transfer after another (into a repository).

With --datadir DIR it restores and prepares beside DIR (inside it, for a mount point or
a symbolic link) and swaps the result into place, as restore --datadir does (--force moves what DIR holds aside), and --start then
starts the server there, waits until it answers on the connection flags and checks it:
a new replica's datadir in one step. --replicate then points it at its primary from the
backup's position, as backstream replicate does (the primary's settings from
[backstream-primary] and the --primary-* flags), and with --catch-up waits until it has
caught up. All this happens before the sender is told, and send prints what each
receiver reported: one send provisions every replica it names.

A receive of a stored backup (send ID --repo R) into --target-dir or --datadir that was
cut off keeps what it verified; receive --resume and the same send continue it.`,
		Example: `  backstream receive --listen :4444 --target-dir /var/lib/mysql.new --prepare --token-file /etc/backstream/token
  backstream receive --listen :4444 --datadir /var/lib/mysql --start --replicate --primary-host db1 --token-file /etc/backstream/token
  backstream receive --listen :4444 --repo /backups --keep-listening --token-file /etc/backstream/token`},
	{Use: "replicate --primary-host HOST [--primary-user USER] [--from-backup ID --repo R]",
		Short: "Make a server restored from a backup replicate from the backup's source (or the source's primary)",
		Long: `replicate runs on a server started on a restored backup (restore or receive). It reads
the backup's binlog coordinates from the datadir (xtrabackup_binlog_info or
mariadb_backup_binlog_info), sets gtid_slave_pos, points the server at the primary with
CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos, starts replication and waits until both
threads run, or reports the replication error.

A backup of a replica holds two positions: the replica's own binary log coordinates, and
its position in its primary's history (xtrabackup_slave_info). replicate asks the primary
for its server_id and takes the one that suits it: the own coordinates when the primary is
the backup's source, the other when it is the source's primary. When that does not tell,
it refuses, naming both; --primary-is chooses.

With --from-backup ID (and --repo) the positions come from that backup's manifest instead
of the datadir: so a server into which a logical backup was restored (restore ID --repo R
--socket ...) replicates from the backup's GTID position. With --from-copy the position is
the one the newest finished copy into the server recorded (backstream copy, table
backstream_load.copies).

The primary's settings come from the [backstream-primary] group of the option files
(/etc/my.cnf, /etc/mysql/my.cnf, ~/.my.cnf, then --primary-defaults-file), then the
flags; its password from that group or BACKSTREAM_PRIMARY_PASSWORD, never a flag.
Connection flags (--host, --socket, --user, ...) reach the local replica.`,
		Example: `  backstream replicate --primary-host db1 --primary-user repl --datadir /var/lib/mysql
  backstream replicate --primary-host db1 --from-backup latest --repo /backups   # after a logical restore
  backstream replicate --primary-host db1 --from-copy --socket /run/mysqld/mysqld.sock   # after backstream copy`},
	{Use: "restore [ID|latest]",
		Short: "Restore a physical backup into a new datadir, or load a logical one into a server",
		Long: `restore reads every stream of a backup in parallel, verifies every checksum and writes
the files into --target-dir, which must be empty or absent. With --prepare it then runs
mariabackup --prepare, so that a server starts on the result. Ownership and modes
(directories 0700, files 0660, as the server makes them) are set at the end. A failed restore leaves the target empty.
Tablespaces of tables created with DATA DIRECTORY stay in the datadir (their .isl links,
which name the source's paths, are removed) unless --map-data-directory OLD=NEW places
them elsewhere; a destination a running server uses, or holding such a file, is refused.

A logical backup is loaded into the server that --host/--socket (and option files) name:
tables are created without their secondary indexes, their data files load in parallel
through LOAD DATA, each checked against the manifest and recorded in a journal on the
target in the same transaction, then indexes, foreign keys, views, triggers, routines,
events follow. Before anything changes, the target server is named on stderr (host or
socket, port, version, @@hostname). Accounts are created only with --users (accounts the
target has are kept unless --replace-users). Tables the target already has are refused
(--drop-existing), and an interrupted load continues with --resume. --database, --table
and their --exclude- forms pick what to load (each filter narrows: see the guide); views,
triggers, routines, events and grants that refer to what is not loaded are left out and
listed; --rename-database a:b loads a as b. --mask db.table.column=FUNCTION (names as in
the backup; repeatable) replaces a column's values in every data file before it loads,
so that the target, its binary log included, never holds them.

With --datadir DIR (physical) the backup is restored and prepared beside DIR, owned, and
renamed into place only when complete; a DIR that holds anything is refused unless
--force, which moves it aside to DIR.replaced-<time>. A DIR that is a mount point or a
symbolic link is restored inside itself (in DIR/.backstream-new) and its entries swapped:
what it held moves into DIR/.backstream-replaced-<time>, lost+found stays. The redo log, undo tablespaces and
binary logs that the server's options (--server-defaults-file, or the option files --start
makes it read) keep outside DIR are refused in the same way if they hold files, which
--force moves aside while the restored ones take their places. --start then starts the server
(systemctl start mariadb, or --start='a command'), waits until it answers on the
connection flags, makes sure it runs on DIR, runs CHECK TABLE on the system tables and
counts the rows of the biggest tables.

With --table db.t --apply-to (physical), the backup is restored and prepared in a work
directory and each table's InnoDB tablespace is exported there and imported into the
running server the connection flags name (on this host, same MariaDB major.minor), created
from the backup's definition, with its triggers; --as db.t2 gives it another name, beside
the live table (its triggers are then named, not created). --database db --apply-to imports
every table of db. Only the tables' files and the system's are read from the repository. A
table the target has is refused, and each import must give the backup's CHECKSUM TABLE.`,
		Example: `  backstream restore latest --repo /backups --target-dir /var/lib/mysql.new --prepare
  backstream restore latest --repo /backups --datadir /var/lib/mysql --force --start
  backstream restore --repo /backups --until "2026-11-21 10:15:00" --target-dir /srv/pitr
  backstream restore latest --repo /backups --table shop.orders --apply-to --as shop.orders_restored --socket /run/mysqld/mysqld.sock
  backstream restore latest --repo /backups --socket /run/mysqld/mysqld.sock    # a logical backup into a running server
  backstream restore latest --repo /backups --socket /run/mysqld/mysqld.sock --mask 'shop.*.email=email' --mask-key-file /etc/backstream/mask.key`},
	{Use: "send [ID|latest --repo R] --to HOST:PORT [--to HOST:PORT ...]",
		Short: "Take a physical backup, or send a stored one, and stream it into receivers on other hosts",
		Long: `send is backup with other hosts as the destination: each of the --parallel streams travels
over its own TLS connection to every receiver (started with backstream receive), which
restores it as it arrives or stores it in its repository. The sender prints each receiver's
outcome, and succeeds only when every receiver reports that the whole backup arrived and
verified; otherwise it names the receivers that failed. The token that both
ends share comes from --token-file or the BACKSTREAM_TOKEN environment variable.

With a backup id (or latest) and --repo, send sends that stored physical backup as it is
stored instead of taking one, and a receiver started with --resume after an interrupted
receive of it is sent only the files it still lacks.`,
		Example: `  backstream send --to replica1:4444 --to replica2:4444 --parallel 4 --token-file /etc/backstream/token
  backstream send latest --repo s3://backups/db1 --to replica1:4444 --token-file /etc/backstream/token`},
	{Use: "sst --role joiner|donor --address ADDR --datadir DIR ...",
		Short: "Galera state snapshot transfer (run by the server as wsrep_sst_backstream, not by hand)",
		Long: `sst is what a Galera node set to wsrep_sst_method=backstream runs, through the script
wsrep_sst_backstream beside the backstream binary: the joiner listens and restores,
verifies and prepares the snapshot as it arrives, then moves it into its datadir and
reports the cluster position; the donor streams a mariabackup --galera-info backup of
itself to it. Settings come from the [sst] group of the server's option files
(token-file, parallel, compress, max-rate, tls-cert, tls-key, tls-ca); see the guide's
chapter "Galera SST".`,
		Example: `  # what the server runs; see docs/guide.md, "Galera SST"
  wsrep_sst_backstream --role joiner --address 10.0.0.3:4444 --datadir /var/lib/mysql --parent 4242`},
	{Use: "token",
		Short: "Print a new random token for send and receive",
		Long: `token prints 32 random bytes, base64url-encoded. Store it in a file only the backup user
can read, on both hosts:  backstream token > /etc/backstream/token && chmod 600 /etc/backstream/token`,
		Example: "  umask 077; backstream token > /etc/backstream/token"},
	{Use: "unlock",
		Short: "Remove stale repository locks (or all of them with --all)",
		Long: `Every operation on a repository holds a lock object under locks/, refreshed while it runs:
backup, receive --repo and expire an exclusive one, restore, verify and cat a shared one.
A lock not refreshed for 5 minutes, or taken on this host by a process that is gone, is
stale: others ignore it and unlock removes it.
--all also removes live locks; use it only when you know their processes are gone
(their holders stop at their next refresh).`,
		Example: "  backstream unlock --repo /backups"},
	{Use: "verify [ID|latest] | --binlogs",
		Short: "Check every checksum of a backup, or restore it into a sandbox and check every table",
		Long: `verify reads every stream object of a backup in parallel and checks the CRC of each
stored frame, the CRC of each xbstream chunk, the stream structure, the digest of each
object and the size and digest of each file against the manifest, and every metadata
object (for a logical backup also that its catalog and its data files agree), writing
nothing.

With --restore-test it proves the backup restores: it restores it (an incremental with
its chain, with prepare; a logical backup by loading it) into a throwaway sandbox server
in a temporary directory, starts the server, runs CHECK TABLE on every table, compares
the row counts and row sums a logical backup recorded with the loaded tables, and
removes the sandbox. The restore checks every checksum on the way. The server on a
physical backup starts with the options the backup recorded in backup-my.cnf (InnoDB's
format; for an encrypted server its encryption plugin and key file, which must be on
this host at the recorded path), then those of --server-defaults-file. --until or
--until-gtid tests a point-in-time restore instead of a named backup. --json prints
the report as JSON for monitoring.

verify ID checks everything a restore of ID reads: for an incremental, every backup of
its chain too. With --until or --until-gtid (and --server, --base) it checks what a
point-in-time restore to that target reads instead: the backup it starts from, with its
chain, and every archived binary log file it replays. What verify finds is recorded in
the backup's directory (verified.json), where check and list report it.

With --binlogs it checks the archived binary logs instead: every file archived whole
against its manifest, every segment of a file being archived against its header's
digest, that those segments leave no hole, and that nothing archived is missing:
no file between two archived ones, and the newest file or segment the source's head
object (binlogs/<source>/head.json) names is there.

Exit code 0 means the backup passed; 3 that it is corrupt or failed its restore test;
1 that the check could not run.`,
		Example: `  backstream verify latest --repo /backups
  backstream verify latest --repo /backups --restore-test
  backstream verify --repo /backups --binlogs`},
	{Use: "version",
		Short: "Print backstream's version, the revision it was built from, and the MariaDB tools it finds",
		Long: `version prints the version of this backstream and the VCS revision it was built
from (as Go recorded them in the binary), the Go it was built with, and each MariaDB
program it runs (mariabackup, mariadb, mariadb-binlog, mariadbd) as found on this
host, in --mariadb-path and then PATH, each with the version it reports: every one
found is listed, as the one taken depends on the server's or the backup's version. backstream --version prints the same.`,
		Example: `  backstream version
  backstream version --json`},
}

// Commands lists every command's documentation.
func Commands() []Command { return slices.Clone(commands) }

// Doc is the documentation of the command of this name; false when the
// table has none.
func Doc(name string) (Command, bool) {
	i := slices.IndexFunc(commands, func(c Command) bool { return c.Name() == name })
	if i < 0 {
		return Command{}, false
	}
	return commands[i], true
}

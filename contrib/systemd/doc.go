// Package systemd holds no code: the systemd units beside it run
// backstream every night (backups, binary log archiving, expiry, a
// check) and every week (a restore drill), and its test keeps them working: systemd-analyze verify, and
// each unit's command line run against a sandbox server.
package systemd

// Package galera holds no code: wsrep_sst_backstream beside it is the
// script a Galera server runs for wsrep_sst_method=backstream (it hands
// the server's arguments to backstream sst, package internal/sst), and
// its test runs it in a real cluster on loopback.
package galera

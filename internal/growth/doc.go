// Package growth holds the test that backstream's steps grow no worse than
// linearly with the number of tables on a server: each step at 2,000
// tables against the same step at 200, by what it costs that does not
// depend on the machine's load (its own CPU, the bytes it allocates, its
// peak memory, the statements the server receives, the requests sent to
// object storage). It is issue 31's check that runs with every test run;
// the measurements at 1,000 to 100,000 tables, against the peers, are
// bench/scale.sh's.
package growth

// Package childenv builds the environment of the programs backstream runs
// (mariabackup, mariadb-binlog, mariadb, mariadbd): its own, less the
// secrets none of them needs. A child's environment is readable in
// /proc/<pid>/environ by its user for as long as it runs, and is passed on
// to whatever it starts in turn.
package childenv

import (
	"os"
	"strings"
)

// secretPrefixes are dropped: AWS_ and MINIO_ hold the object store's
// credentials, BACKSTREAM_ the passphrase, token and replication password.
var secretPrefixes = []string{"AWS_", "MINIO_", "BACKSTREAM_"}

// secretNames are dropped too. A child gets the MariaDB password from the
// private option file backstream writes for it, never from MYSQL_PWD.
var secretNames = []string{"MYSQL_PWD"}

// Env is this process's environment without the secrets, then extra
// ("NAME=value"), which wins over a variable of the same name.
func Env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !secret(name) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

func secret(name string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, n := range secretNames {
		if name == n {
			return true
		}
	}
	return false
}

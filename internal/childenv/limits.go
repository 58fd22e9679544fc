package childenv

import "syscall"

// RaiseOpenFiles raises this process's soft limit of open files to its
// hard limit, which the programs it runs then inherit. mariabackup opens
// the tablespaces of every table, and under a soft limit of 1024 (the
// default of a systemd service or a login, with a hard limit of 524288
// and more) it stops at a thousand tables; a DBA would raise it with
// ulimit -n, as far as the hard limit, which needs no privilege. Go raises
// its own soft limit when it starts but hands its children the limit it
// started with, unless the limit is set explicitly, as here.
func RaiseOpenFiles() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

package sst

import (
	"context"
	"errors"
	"fmt"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/transport"
)

// donate sends the joiner a snapshot (or, with --bypass, tells it that IST
// suffices) and prints "done <position>".
func donate(ctx context.Context, req Request, set Settings, tok []byte, opt Options) error {
	addr, err := dialAddr(req.Address)
	if err != nil {
		return err
	}
	topt := transport.Options{Token: tok, CAFile: set.TLSCA, ServerName: set.ServerName}
	c, err := transport.Dial(ctx, addr, purpose, topt)
	if err != nil {
		return fmt.Errorf("donor: reaching the joiner at %s: %w", addr, err)
	}
	defer c.Close()
	typ := byte(msgSnapshot)
	if req.Bypass {
		typ = msgBypass
	}
	err = c.WriteMessage(typ, []byte(req.GTID+" "+req.DomainID))
	if err == nil {
		var got byte
		if got, _, err = c.ReadMessage(nil); err == nil && got != msgAck {
			err = fmt.Errorf("unexpected message %q", got)
		}
	}
	if err != nil {
		return fmt.Errorf("donor: joiner %s did not take the transfer: %w", addr, err)
	}
	c.CloseWrite()
	if req.Bypass {
		logf(opt.Log, "INFO", "the joiner at %s catches up by IST from %s", addr, req.GTID)
		_, err := fmt.Fprintf(opt.Stdout, "done %s\n", req.GTID)
		return err
	}
	name, password, pwset := credentials(opt.Auth)
	unsetAuth()
	if name == "" {
		return errors.New("donor: no account for mariabackup: set wsrep_sst_auth (user:password) on the donor")
	}
	cdc, err := codec.Parse(set.Compress)
	if err != nil {
		return err
	}
	s, err := remote.Dial(ctx, []string{addr}, topt)
	if err != nil {
		return fmt.Errorf("donor: %w", err)
	}
	defer s.Close()
	logf(opt.Log, "INFO", "sending a snapshot to %s: %d streams, %s, at most %s", addr, set.Parallel, set.Compress, rate(set.MaxRate))
	m, err := physical.RunBackup(ctx, physical.BackupJob{
		Dest: s, Conn: mariadb.Config{Socket: req.Socket, Protocol: "socket", User: name, Password: password, PasswordSet: pwset},
		// On a Galera node the backup records the cluster position
		// mariabackup read while commits were blocked (--galera-info),
		// which the joiner reports: the snapshot's own.
		Mariabackup: set.Mariabackup, Parallel: set.Parallel, Codec: cdc, Hash: archive.DefaultHash,
		MaxRate: set.MaxRate, Progress: opt.Progress, Version: opt.Version,
	})
	if err != nil {
		return fmt.Errorf("donor: %w", err)
	}
	for _, r := range s.Reports() {
		if r.Err != nil {
			return fmt.Errorf("donor: snapshot %s: %w", m.ID, r.Err)
		}
	}
	logf(opt.Log, "INFO", "snapshot %s sent to %s: %d files, %d bytes on the wire", m.ID, addr, len(m.Files), m.Stats.StoredBytes)
	_, err = fmt.Fprintf(opt.Stdout, "done %s\n", req.GTID)
	return err
}

func rate(r int64) string {
	if r == 0 {
		return "no rate limit"
	}
	return fmt.Sprintf("%d bytes/s", r)
}

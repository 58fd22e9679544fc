package fidelitytest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Load creates the fixture's database on the server listening on socket
// (dropping one left from before) and runs the fixture in it through the
// real mariadb client, which takes the files the way MariaDB's own tests
// are written (DELIMITER, comments, several statements a line).
func (f *Fixture) Load(ctx context.Context, socket, user string) error {
	client, err := exec.LookPath("mariadb")
	if err != nil {
		return fmt.Errorf("fixture %s: the mariadb client: %w", f.Name, err)
	}
	args := []string{"--no-defaults", "--socket=" + socket, "--user=" + user, "--default-character-set=utf8mb4", "--batch"}
	create := exec.CommandContext(ctx, client, append(args, "-e",
		"DROP DATABASE IF EXISTS `"+f.Database+"`; CREATE DATABASE `"+f.Database+"`")...)
	if out, err := create.CombinedOutput(); err != nil {
		return fmt.Errorf("fixture %s: create database: %v: %s", f.Name, err, out)
	}
	cmd := exec.CommandContext(ctx, client, append(args, "--database="+f.Database)...)
	cmd.Stdin = bytes.NewReader(f.SQL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("fixture %s (%s): %v: %s", f.Name, f.Source, err, strings.TrimSpace(out.String()))
	}
	return nil
}

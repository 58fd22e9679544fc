package schema

import (
	"slices"
	"testing"
)

func TestParseGrant(t *testing.T) {
	for _, c := range []struct {
		grant string
		want  GrantObject
		ok    bool
	}{
		{"GRANT USAGE ON *.* TO `u`@`%`", GrantObject{Level: GrantGlobal}, true},
		{"GRANT ALL PRIVILEGES ON `shop`.* TO `u`@`%` WITH GRANT OPTION", GrantObject{Level: GrantDatabase, Database: "shop"}, true},
		{"GRANT SELECT, INSERT ON `shop`.`secret` TO `u`@`%`", GrantObject{Level: GrantTable, Database: "shop", Name: "secret"}, true},
		{"GRANT SELECT (`id`, ` on `), UPDATE (`id`) ON `a.b`.`t``x` TO `u`@`h`", GrantObject{Level: GrantTable, Database: "a.b", Name: "t`x"}, true},
		{"GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `u`@`%`", GrantObject{Level: GrantRoutine, Kind: KindProcedure, Database: "shop", Name: "p"}, true},
		{"GRANT EXECUTE, ALTER ROUTINE ON FUNCTION `shop`.`f` TO `u`@`%`", GrantObject{Level: GrantRoutine, Kind: KindFunction, Database: "shop", Name: "f"}, true},
		{"GRANT EXECUTE ON PACKAGE BODY `shop`.`pk` TO `u`@`%`", GrantObject{Level: GrantRoutine, Kind: KindPackageBody, Database: "shop", Name: "pk"}, true},
		{"GRANT `reader` TO `u`@`%` WITH ADMIN OPTION", GrantObject{Level: GrantOther}, true},
		{"GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION", GrantObject{Level: GrantOther}, true},
		{"REVOKE ALL ON *.* FROM `u`", GrantObject{}, false},
		{"GRANT SELECT ON TO `u`", GrantObject{}, false},
	} {
		got, ok := ParseGrant(c.grant)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %+v %v, want %+v %v", c.grant, got, ok, c.want, c.ok)
		}
	}
}

func TestPasswordless(t *testing.T) {
	for _, c := range []struct {
		create string
		want   bool
	}{
		{"CREATE USER `u`@`localhost`", true},
		{"CREATE USER `u`@`%` IDENTIFIED BY PASSWORD ''", true},
		{"CREATE USER `u`@`%` IDENTIFIED VIA mysql_native_password USING '' REQUIRE ISSUER 'x'", true},
		{"CREATE USER `u`@`%` IDENTIFIED BY PASSWORD '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'", false},
		{"CREATE USER `root`@`localhost` IDENTIFIED VIA mysql_native_password USING 'invalid' OR unix_socket", false},
		{"CREATE USER `m`@`localhost` IDENTIFIED VIA unix_socket", false},
		{"CREATE USER `u`@`%` REQUIRE SSL", true},
	} {
		if got := (&Account{Create: c.create}).Passwordless(); got != c.want {
			t.Errorf("%s: passwordless %v, want %v", c.create, got, c.want)
		}
	}
	if (&Account{User: "r", Role: true}).Passwordless() {
		t.Error("a role counts as passwordless")
	}
}

func TestGrantPrivileges(t *testing.T) {
	for _, c := range []struct {
		grant string
		want  []string
	}{
		{"GRANT USAGE ON *.* TO `u`@`%`", []string{"USAGE"}},
		{"GRANT ALL PRIVILEGES ON `shop`.* TO `u`@`%` WITH GRANT OPTION", []string{"ALL PRIVILEGES"}},
		{"GRANT SELECT (`id`, ` on `), UPDATE (`id`) ON `a.b`.`t``x` TO `u`@`h`", []string{"SELECT", "UPDATE"}},
		{"GRANT SELECT, SHOW CREATE ROUTINE, trigger ON `d`.* TO `r`", []string{"SELECT", "SHOW CREATE ROUTINE", "TRIGGER"}},
		{"GRANT EXECUTE, ALTER ROUTINE ON FUNCTION `shop`.`f` TO `u`@`%`", []string{"EXECUTE", "ALTER ROUTINE"}},
		{"GRANT `reader` TO `u`@`%` WITH ADMIN OPTION", nil},
		{"SET DEFAULT ROLE `r` FOR `u`@`localhost`", nil},
		{"GRANT SELECT ON TO", []string{"SELECT"}},
	} {
		if got := GrantPrivileges(c.grant); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.grant, got, c.want)
		}
	}
}

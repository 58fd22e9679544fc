package schema

import "testing"

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

package schema

import (
	"strings"
	"testing"
)

func TestPickDelimiter(t *testing.T) {
	for _, c := range []struct {
		texts []string
		want  string
	}{
		{nil, ";;"},
		{[]string{"BEGIN SELECT ';;'; END"}, "$$"},
		{[]string{"a ;; b", "c $$ d"}, "//"},
		{[]string{"a ;; $$ //"}, ";;;"},
		{[]string{"a ;; $$ // ;;;"}, ";;;;"},
	} {
		if got := pickDelimiter(c.texts); got != c.want {
			t.Errorf("pickDelimiter(%q) = %q, want %q", c.texts, got, c.want)
		}
	}
}

// commentLines are the comment lines of a script.
func commentLines(script string) []string {
	var out []string
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(l, "--") {
			out = append(out, l)
		}
	}
	return out
}

func TestObjectsScript(t *testing.T) {
	d := &Database{Name: "d\nb", Create: "CREATE DATABASE `d\nb` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci */ COMMENT 'COLLATE latin1_bin'"}
	objs := []*Object{
		{Kind: KindPackage, Database: "d\nb", Name: "pkg", Create: "CREATE DEFINER=`root`@`localhost` PACKAGE \"pkg\" AS\n  FUNCTION f RETURN INT;\nEND",
			SQLMode: "PIPES_AS_CONCAT,ANSI_QUOTES,ORACLE", CharacterSetClient: "utf8mb4", CollationConnection: "utf8mb4_general_ci", DatabaseCollation: "utf8mb4_unicode_ci"},
		{Kind: KindProcedure, Database: "d\nb", Name: "p\r\nq", Create: "CREATE PROCEDURE `p\r\nq`() SELECT ';;' AS c",
			SQLMode: "", CharacterSetClient: "latin1", CollationConnection: "latin1_swedish_ci", DatabaseCollation: "utf8mb4_bin"},
		{Kind: KindProcedure, Database: "d\nb", Name: "é", Create: "CREATE PROCEDURE `é`() SELECT 'é' AS c",
			SQLMode: "", CharacterSetClient: "latin1", CollationConnection: "latin1_swedish_ci", DatabaseCollation: "utf8mb4_unicode_ci"},
		{Kind: KindEvent, Database: "d\nb", Name: "ev", Create: "CREATE EVENT ev ON SCHEDULE EVERY 1 DAY DO SELECT 1",
			SQLMode: "STRICT_TRANS_TABLES", TimeZone: "+02:00", CharacterSetClient: "utf8mb3", CollationConnection: "utf8mb3_general_ci", DatabaseCollation: "utf8mb4_unicode_ci"},
		{Kind: KindView, Database: "d\nb", Name: "v", Create: "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1 AS `a`",
			CharacterSetClient: "utf8mb4", CollationConnection: "utf8mb4_general_ci", Columns: []string{"a"}},
	}
	var encoded []string
	encode := func(stmt, cs string) (string, error) {
		if cs == "latin1" && !isASCII(stmt) {
			encoded = append(encoded, stmt)
			return strings.ReplaceAll(stmt, "é", "\xe9"), nil
		}
		return stmt, nil
	}
	s, err := ObjectsScript(d, "objects", objs, encode)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", s)
	for _, want := range []string{
		"SET NAMES utf8mb4;\nUSE `d\nb`;\nDELIMITER $$\n",
		// The package: its own mode, the database collation as it is.
		"\n-- package `pkg`\nSET SESSION sql_mode = 'PIPES_AS_CONCAT,ANSI_QUOTES,ORACLE', character_set_client = 'utf8mb4', collation_connection = 'utf8mb4_general_ci'$$\nCREATE DEFINER=`root`@`localhost` PACKAGE \"pkg\" AS\n  FUNCTION f RETURN INT;\nEND$$\n",
		// Another database collation for the moment; the first COLLATE of
		// SHOW CREATE DATABASE is the database's, not the comment's.
		"\n-- procedure `p\\r\\nq`\nALTER DATABASE `d\nb` COLLATE utf8mb4_bin$$\nSET SESSION sql_mode = '', character_set_client = 'latin1', collation_connection = 'latin1_swedish_ci'$$\nCREATE PROCEDURE `p\r\nq`() SELECT ';;' AS c$$\nALTER DATABASE `d\nb` COLLATE utf8mb4_unicode_ci$$\n",
		// Latin-1 bytes, read by the client as Latin-1.
		"\n-- procedure `é`\n\\C latin1\nSET SESSION sql_mode = '', character_set_client = 'latin1', collation_connection = 'latin1_swedish_ci'$$\nCREATE PROCEDURE `\xe9`() SELECT '\xe9' AS c$$\n\\C utf8mb4\n",
		"\n-- event `ev`\nSET SESSION sql_mode = 'STRICT_TRANS_TABLES', character_set_client = 'utf8mb3', collation_connection = 'utf8mb3_general_ci', time_zone = '+02:00'$$\nCREATE EVENT ev",
		// A view replaces its placeholder, under the mode of views.
		"\n-- view `v`\nSET SESSION sql_mode = '" + ddlSQLMode + "', character_set_client = 'utf8mb4', collation_connection = 'utf8mb4_general_ci'$$\nCREATE OR REPLACE ALGORITHM=UNDEFINED",
		"\nDELIMITER ;\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	if len(encoded) != 1 {
		t.Errorf("encoded %q, want the one Latin-1 text with a non-ASCII character", encoded)
	}
	// A line break in a name never ends a comment: the comment lines are
	// the header and one per object.
	if n := len(commentLines(s)); n != 1+len(objs) {
		t.Errorf("%d comment lines, want %d", n, 1+len(objs))
	}
	bad := &Object{Kind: KindProcedure, Name: "x", Create: "CREATE PROCEDURE x() SELECT 1", CharacterSetClient: "latin1; DROP"}
	if _, err := ObjectsScript(d, "objects", []*Object{bad}, encode); err == nil || !strings.Contains(err.Error(), "not a character set or collation name") {
		t.Errorf("a character set name that is not one: %v", err)
	}
}

func TestAccountsScript(t *testing.T) {
	c := &Catalog{
		Databases: []*Database{{Name: "d", Tables: []*Table{{Name: "t"}}, Routines: []*Object{{Kind: KindFunction, Name: "f"}}}},
		Users: []*Account{
			{User: "r", Role: true, Grants: []string{"GRANT SELECT ON `d`.`t` TO `r`", "GRANT SELECT ON `d`.`gone` TO `r`"}},
			{User: "u'x", Host: "%", Create: "CREATE USER `u'x`@`%` IDENTIFIED BY PASSWORD '*AB'", DefaultRole: "r",
				Grants: []string{"GRANT USAGE ON *.* TO `u'x`@`%` IDENTIFIED BY PASSWORD '*AB'", "GRANT `r` TO `u'x`@`%`",
					"GRANT EXECUTE ON FUNCTION `d`.`f` TO `u'x`@`%`", "GRANT EXECUTE ON PROCEDURE `d`.`f` TO `u'x`@`%`", "GRANT SELECT ON `other`.* TO `u'x`@`%`"}},
		},
	}
	s := AccountsScript(c)
	t.Logf("\n%s", s)
	for _, want := range []string{
		"SET SESSION sql_mode = 'NO_AUTO_CREATE_USER';\nDELIMITER ;;\n",
		"-- role `r`\nSET @backstream_created_0 = 0;;\nBEGIN NOT ATOMIC\n  IF NOT EXISTS (SELECT 1 FROM mysql.user WHERE User = 'r' AND Host = '') THEN\n    CREATE ROLE `r`;\n    SET @backstream_created_0 = 1;\n  ELSE\n    SELECT 'role `r` exists on this server: kept as it is, without the backup''s grants' AS kept;\n  END IF;\nEND;;\n",
		"IF NOT EXISTS (SELECT 1 FROM mysql.user WHERE User = 'u''x' AND Host = '%') THEN\n    CREATE USER `u'x`@`%` IDENTIFIED BY PASSWORD '*AB';\n    SET @backstream_created_1 = 1;",
		"-- grants of `r`\n-- left out: GRANT SELECT ON `d`.`gone` TO `r` (`d`.`gone` is not in the backup)\nBEGIN NOT ATOMIC\n  IF @backstream_created_0 THEN\n    GRANT SELECT ON `d`.`t` TO `r`;\n  END IF;\nEND;;\n",
		"-- left out: GRANT EXECUTE ON PROCEDURE `d`.`f` TO `u'x`@`%` (procedure `d`.`f` is not in the backup)\n",
		"    GRANT EXECUTE ON FUNCTION `d`.`f` TO `u'x`@`%`;\n    GRANT SELECT ON `other`.* TO `u'x`@`%`;\n",
		"-- default role of `u'x`@`%`\nBEGIN NOT ATOMIC\n  IF @backstream_created_1 THEN\n    SET DEFAULT ROLE `r` FOR `u'x`@`%`;\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	// Roles are created before users, grants after every account.
	role, user, grant := strings.Index(s, "CREATE ROLE"), strings.Index(s, "CREATE USER"), strings.Index(s, "GRANT SELECT ON `d`.`t`")
	if !(role < user && user < grant) {
		t.Errorf("CREATE ROLE at %d, CREATE USER at %d, the first grant at %d: want them in that order", role, user, grant)
	}
}

func TestTablesScript(t *testing.T) {
	d := &Database{Name: "d"}
	tables := []*Table{{Name: "s", Sequence: true, Create: "CREATE SEQUENCE `s` start with 1"}, {Name: "t\nu", Create: "CREATE TABLE `t\nu` (a INT)"}}
	s := TablesScript(d, tables, func(t *Table) string { return t.Create + " /* as given */" })
	want := "SET NAMES utf8mb4;\nSET SESSION sql_mode = '" + ddlSQLMode + "', explicit_defaults_for_timestamp = 'ON', foreign_key_checks = 'OFF', time_zone = '+00:00';\nUSE `d`;\n" +
		"\n-- sequence `s`\nCREATE SEQUENCE `s` start with 1 /* as given */;\n\n-- table `t\\nu`\nCREATE TABLE `t\nu` (a INT) /* as given */;\n"
	if !strings.HasSuffix(s, want) {
		t.Errorf("got\n%s\nwant it to end in\n%s", s, want)
	}
	if got := SetValStatement("d`b", &Table{Name: "s", NextValue: 101, CycleCount: 2}); got != "DO SETVAL(`d``b`.`s`, 101, 0, 2)" {
		t.Errorf("SetValStatement: %s", got)
	}
}

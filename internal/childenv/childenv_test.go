package childenv

import (
	"slices"
	"testing"
)

func TestEnvDropsSecrets(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3-secret")
	t.Setenv("MINIO_ROOT_PASSWORD", "minio-secret")
	t.Setenv("BACKSTREAM_PASSPHRASE", "passphrase")
	t.Setenv("MYSQL_PWD", "db-password")
	t.Setenv("CHILDENV_KEPT", "kept")
	env := Env("HOME=/private", "TZ=UTC")
	for _, kv := range env {
		switch kv {
		case "AWS_SECRET_ACCESS_KEY=s3-secret", "MINIO_ROOT_PASSWORD=minio-secret", "BACKSTREAM_PASSPHRASE=passphrase", "MYSQL_PWD=db-password":
			t.Errorf("the child environment keeps %s", kv)
		}
	}
	for _, want := range []string{"CHILDENV_KEPT=kept", "HOME=/private", "TZ=UTC"} {
		if !slices.Contains(env, want) {
			t.Errorf("the child environment lacks %s", want)
		}
	}
	if env[len(env)-1] != "TZ=UTC" {
		t.Errorf("extra variables must come last (exec keeps the last of a name): %v", env[len(env)-2:])
	}
}

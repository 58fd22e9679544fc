package remote

import (
	"strings"
	"testing"
)

// parseOutcome takes what encodeOutcome makes, cuts nothing a receiver
// cannot send, and refuses outcomes whose fields contradict each other.
func TestParseOutcome(t *testing.T) {
	long := strings.Repeat("é", maxOutcomeText)
	b, err := encodeOutcome(Outcome{Status: StatusFailed, Backup: testID, Into: IntoDatadir, Step: StepReplicate, Error: long, Text: long})
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseOutcome(b)
	if err != nil || len(o.Error) > maxOutcomeText || len(o.Text) > maxOutcomeText || !strings.HasPrefix(long, o.Error) || o.Step != StepReplicate {
		t.Fatalf("a long outcome: %v, %d/%d bytes of text", err, len(o.Error), len(o.Text))
	}
	for _, bad := range []string{
		``, `{}`, `[]`, `{"status":"ok","backup":"x","into":"datadir","extra":1}`,
		`{"status":"ok","backup":"x","into":"datadir"}{}`,
		`{"status":"maybe","backup":"x","into":"datadir"}`,
		`{"status":"ok","backup":"","into":"datadir"}`,
		`{"status":"ok","backup":"x","into":"elsewhere"}`,
		`{"status":"ok","backup":"x","into":"datadir","error":"e"}`,
		`{"status":"ok","backup":"x","into":"datadir","step":"start"}`,
		`{"status":"failed","backup":"x","into":"datadir"}`,
		`{"status":"failed","backup":"x","into":"datadir","step":"dance","error":"e"}`,
		`{"status":"ok","backup":"x","into":"repository","server":{}}`,
		`{"status":"ok","backup":"x","into":"datadir","replication":{}}`,
		`{"status":"ok","backup":"x","into":"datadir","text":"` + strings.Repeat("x", maxOutcome) + `"}`,
	} {
		if o, err := parseOutcome([]byte(bad)); err == nil {
			t.Errorf("parseOutcome(%.80q) accepted %+v", bad, o)
		}
	}
	o, err = parseOutcome([]byte(`{"status":"failed","backup":"x","into":"datadir","error":"a\u001b[2Jb","text":"c\u0007d\n"}`))
	if err != nil || o.Error != "a?[2Jb" || o.Text != "c?d\n" {
		t.Errorf("terminal controls: %+v, %v", o, err)
	}
}

package cli

import "testing"

func listIDs(t *testing.T, location string) []string {
	t.Helper()
	var ids []string
	for _, e := range backupListing(t, location) {
		ids = append(ids, e.ID)
	}
	return ids
}

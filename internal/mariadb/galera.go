package mariadb

import (
	"context"
	"fmt"
	"strings"
)

// Galera is what a server says of its Galera replication.
type Galera struct {
	// Node is true when the server is a Galera node: wsrep_on, with a
	// provider loaded.
	Node bool
	// Desync is @@wsrep_desync: the node sends no flow control.
	Desync bool
	// State is wsrep_local_state_comment: Synced, Donor/Desynced, ...
	State string
}

// ReadGalera reads the server's Galera facts; a server built without
// Galera, or running without a provider, is no node.
func ReadGalera(ctx context.Context, db Querier) (Galera, error) {
	var g Galera
	rows, err := ShowRows(ctx, db, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_provider', 'wsrep_desync')")
	if err != nil {
		return g, fmt.Errorf("read the server's wsrep variables: %w", err)
	}
	v := map[string]string{}
	for _, r := range rows {
		v[strings.ToLower(r["Variable_name"].String)] = r["Value"].String
	}
	provider := v["wsrep_provider"]
	g.Node = strings.EqualFold(v["wsrep_on"], "ON") && provider != "" && !strings.EqualFold(provider, "none")
	if !g.Node {
		return g, nil
	}
	g.Desync = strings.EqualFold(v["wsrep_desync"], "ON")
	if g.State, err = GlobalStatus(ctx, db, "wsrep_local_state_comment"); err != nil {
		return g, err
	}
	return g, nil
}

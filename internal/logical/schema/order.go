package schema

// viewKey names a view across databases.
type viewKey struct{ db, name string }

// viewReferences returns every (database, name) the view text may read: each
// `a` alone (a table of the view's own database, which SHOW CREATE VIEW
// prints unqualified when the session's database is the view's), `a`.`b`
// (database a, table b) and the first two parts of `a`.`b`.`c` (a column of
// a table of another database). Names before "(" are function calls; the
// names of the statement's header (the view's own) are skipped.
func viewReferences(db string, o *Object) []viewKey {
	s := o.Create
	toks := significant(lex(s, lexMode{}))
	// Skip the header: everything up to the AS after VIEW.
	start := 0
	for i := 0; i < len(toks); i++ {
		if toks[i].is(s, "VIEW") {
			for j := i + 1; j < len(toks); j++ {
				if toks[j].is(s, "AS") {
					start = j + 1
					break
				}
			}
			break
		}
	}
	var refs []viewKey
	for i := start; i < len(toks); {
		if toks[i].kind != tokIdent {
			i++
			continue
		}
		// A dotted chain of quoted names.
		parts := []string{toks[i].name(s)}
		j := i + 1
		for j+1 < len(toks) && toks[j].punct(s, '.') && toks[j+1].kind == tokIdent {
			parts = append(parts, toks[j+1].name(s))
			j += 2
		}
		call := j < len(toks) && toks[j].punct(s, '(')
		alias := i > 0 && toks[i-1].is(s, "AS")
		if !call && !alias {
			switch len(parts) {
			case 1:
				refs = append(refs, viewKey{db, parts[0]})
			default:
				refs = append(refs, viewKey{parts[0], parts[1]})
			}
		}
		i = j
	}
	return refs
}

// orderViews returns all views in an order where each comes after the views
// it references. The walk is
// depth-first from the views in catalog order, so independent views keep
// their order; an edge back to a view still being visited (only a mistaken
// reference can close a cycle) is ignored.
func orderViews(dbs []*Database) []DatabaseObject {
	type node struct {
		obj   DatabaseObject
		state int // 0 new, 1 visiting, 2 done
	}
	nodes := map[viewKey]*node{}
	var all []*node
	for _, d := range dbs {
		for _, v := range d.Views {
			n := &node{obj: DatabaseObject{Database: d, Object: v}}
			nodes[viewKey{d.Name, v.Name}] = n
			all = append(all, n)
		}
	}
	var order []DatabaseObject
	var visit func(n *node)
	visit = func(n *node) {
		if n.state != 0 {
			return
		}
		n.state = 1
		for _, r := range viewReferences(n.obj.Database.Name, n.obj.Object) {
			if dep, ok := nodes[r]; ok && dep != n {
				visit(dep)
			}
		}
		n.state = 2
		order = append(order, n.obj)
	}
	for _, n := range all {
		visit(n)
	}
	return order
}

// sortViews puts every Database.Views in the order of orderViews.
func sortViews(dbs []*Database) {
	order := orderViews(dbs)
	for _, d := range dbs {
		d.Views = d.Views[:0]
	}
	for _, o := range order {
		o.Database.Views = append(o.Database.Views, o.Object)
	}
}

// ViewReads returns the tables, sequences and views of the catalog that
// view v of database db may read, as {database, name} pairs (see
// OrderedViews for how they are found; a name that is not an object of the
// catalog is left out).
func (c *Catalog) ViewReads(db string, v *Object) [][2]string {
	known := map[viewKey]bool{}
	for _, d := range c.Databases {
		for _, t := range d.Tables {
			known[viewKey{d.Name, t.Name}] = true
		}
		for _, o := range d.Views {
			known[viewKey{d.Name, o.Name}] = true
		}
	}
	var out [][2]string
	seen := map[viewKey]bool{}
	for _, r := range viewReferences(db, v) {
		if known[r] && !seen[r] && r != (viewKey{db, v.Name}) {
			seen[r] = true
			out = append(out, [2]string{r.db, r.name})
		}
	}
	return out
}

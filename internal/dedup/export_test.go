package dedup

// NameOf is s's name of block b, for the tests.
func NameOf(s *Store, b []byte) Name { return s.name(b) }

// SetMaxRecipe sets the largest recipe a backup commits, for the tests;
// it returns the restore.
func SetMaxRecipe(n int) func() {
	old := maxRecipe
	maxRecipe = n
	return func() { maxRecipe = old }
}

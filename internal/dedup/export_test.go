package dedup

// NameOf is s's name of block b, for the tests.
func NameOf(s *Store, b []byte) Name { return s.name(b) }

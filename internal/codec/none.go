package codec

// None stores frames as they are, for data that is already compressed or
// encrypted, and for the fastest links where compression would be the
// bottleneck.
type None struct{}

// Name returns "none".
func (None) Name() string { return "none" }

// Level returns 0: there is nothing to tune.
func (None) Level() int { return 0 }

// String returns "none".
func (None) String() string { return "none" }

// Suffix returns "": raw objects are named plain ".xbs".
func (None) Suffix() string { return "" }

// Compress appends src to dst.
func (None) Compress(dst, src []byte) ([]byte, error) {
	if err := checkSource("none", src); err != nil {
		return dst, err
	}
	return append(dst, src...), nil
}

// Decompress appends src to dst after checking that it has the expected
// length, the one check a raw frame allows.
func (None) Decompress(dst, src []byte, size int) ([]byte, error) {
	if err := checkSizes("none", size); err != nil {
		return dst, err
	}
	if len(src) != size {
		return dst, corruptf("none", "frame holds %d bytes, expected %d", len(src), size)
	}
	return append(dst, src...), nil
}

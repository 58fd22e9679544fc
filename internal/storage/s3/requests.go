package s3

import (
	"net/http"
	"sync/atomic"
)

// Requests counts the HTTP requests sent to an object store, in the
// classes object stores bill them by (AWS S3's list prices, 2026, per
// 1,000 requests in us-east-1: PUT, COPY, POST and LIST $0.005; GET, HEAD
// and the rest $0.0004; DELETE free). Every attempt counts, retries
// included: a store bills each. One Requests may be shared by every
// Backend a command opens (Config.Requests); it is safe for concurrent
// use, and its zero value counts nothing yet.
type Requests struct {
	write, read, free atomic.Int64
}

// RequestCounts is what a Requests counted.
type RequestCounts struct {
	// Write is PUT, POST, COPY and LIST requests (AWS's "tier 1").
	Write int64 `json:"write"`
	// Read is GET, HEAD and every other request but DELETE ("tier 2").
	Read int64 `json:"read"`
	// Free is DELETE requests, which stores do not bill.
	Free int64 `json:"free"`
}

// List prices of AWS S3 Standard in us-east-1, in dollars per 1,000
// requests, for estimates (docs/benchmarks.md); other stores differ.
const (
	WritePricePer1000 = 0.005
	ReadPricePer1000  = 0.0004
)

// Counts returns what r counted so far; a nil r counted nothing.
func (r *Requests) Counts() RequestCounts {
	if r == nil {
		return RequestCounts{}
	}
	return RequestCounts{Write: r.write.Load(), Read: r.read.Load(), Free: r.free.Load()}
}

// Total is every request counted.
func (c RequestCounts) Total() int64 { return c.Write + c.Read + c.Free }

// Cost is what the requests cost at the list prices above, in dollars.
func (c RequestCounts) Cost() float64 {
	return float64(c.Write)*WritePricePer1000/1000 + float64(c.Read)*ReadPricePer1000/1000
}

// count adds one request to its class.
func (r *Requests) count(req *http.Request) {
	switch {
	case req.Method == http.MethodDelete:
		r.free.Add(1)
	case req.Method == http.MethodPut || req.Method == http.MethodPost || isList(req):
		r.write.Add(1)
	default:
		r.read.Add(1)
	}
}

// isList tells the GET requests that list (objects, multipart uploads,
// the parts of one, object versions), which stores bill as writes, from
// those that read an object or ask a bucket's location.
func isList(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	q := req.URL.Query()
	return q.Has("list-type") || q.Has("uploads") || q.Has("uploadId") || q.Has("versions") ||
		q.Has("prefix") || q.Has("delimiter")
}

// countingTransport counts each request before it is sent.
type countingTransport struct {
	next     http.RoundTripper
	requests *Requests
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.count(req)
	return t.next.RoundTrip(req)
}

package github

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/renameio/v2"
)

// etagCache makes every GET conditional: it remembers each answer's ETag
// and body, sends If-None-Match, and turns a 304 back into the answer it
// stands for. A 304 does not count against GitHub's rate limit, so a run
// that re-reads unchanged issues costs nothing. Entries are kept on disk
// (dir) so the next run starts warm; they are keyed by URL and Accept,
// never by the token, and hold no credential.
type etagCache struct {
	base http.RoundTripper
	dir  string // "" keeps entries in memory only
	mu   sync.Mutex
	mem  map[string]*etagEntry
}

type etagEntry struct {
	ETag   string      `json:"etag"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// cachedHeaders are the headers of a 200 that the answer to a 304 keeps:
// pagination and the content type. Rate-limit headers come from the 304.
var cachedHeaders = []string{"Link", "Content-Type"}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("Range") != "" {
		// A write needs no invalidation: the next GET of what it changed
		// gets a new ETag and a 200.
		return c.base.RoundTrip(req)
	}
	key := c.key(req)
	e := c.load(key)
	if e != nil {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", e.ETag)
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && e != nil:
		_ = resp.Body.Close()
		for _, h := range cachedHeaders {
			if v := e.Header.Values(h); len(v) > 0 {
				resp.Header[h] = v
			}
		}
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		resp.Body = io.NopCloser(bytes.NewReader(e.Body))
		resp.ContentLength = int64(len(e.Body))
		return resp, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		ne := &etagEntry{ETag: resp.Header.Get("ETag"), Header: http.Header{}, Body: body}
		for _, h := range cachedHeaders {
			if v := resp.Header.Values(h); len(v) > 0 {
				ne.Header[h] = v
			}
		}
		c.store(key, ne)
	}
	return resp, nil
}

func (c *etagCache) key(req *http.Request) string {
	sum := sha256.Sum256([]byte(req.URL.String() + "\n" + req.Header.Get("Accept")))
	return hex.EncodeToString(sum[:])
}

func (c *etagCache) load(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mem[key]; ok {
		return e
	}
	if c.dir == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(c.dir, key+".json"))
	if err != nil {
		return nil
	}
	var e etagEntry
	if json.Unmarshal(data, &e) != nil || strings.TrimSpace(e.ETag) == "" {
		return nil
	}
	if c.mem == nil {
		c.mem = map[string]*etagEntry{}
	}
	c.mem[key] = &e
	return &e
}

func (c *etagCache) store(key string, e *etagEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		c.mem = map[string]*etagEntry{}
	}
	c.mem[key] = e
	if c.dir == "" {
		return
	}
	data, err := json.Marshal(e)
	if err != nil || os.MkdirAll(c.dir, 0o700) != nil {
		return
	}
	// A cache: a failed write costs a request later, nothing else.
	_ = renameio.WriteFile(filepath.Join(c.dir, key+".json"), data, 0o600)
}

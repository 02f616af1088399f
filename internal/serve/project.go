package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/receipt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// relinkEvery is how often a project without a live link looks for a run
// that started.
const relinkEvery = time.Second

// project is one watched project directory: what its .ralph/ says, and
// the live link to its run's control channel while one runs.
type project struct {
	id, dir string
	hub     *Hub
	all     *Hub // the server's stream of every project
	mu      sync.Mutex
	live    bool
	info    Info
}

// projectID is a project's id in the API: stable for a directory across
// its runs, and naming no path.
func projectID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:6])
}

func newProject(dir string, all *Hub) *project {
	return &project{id: projectID(dir), dir: dir, hub: NewHub(), all: all}
}

func (p *project) socket() string { return SocketPath(p.dir) }

// Live reports whether the project's run is linked, and its info.
func (p *project) Live() (bool, Info) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live, p.info
}

func (p *project) setLive(live bool, info Info) {
	p.mu.Lock()
	p.live, p.info = live, info
	p.mu.Unlock()
	word := "unlinked"
	if live {
		word = "linked"
	}
	// The page refreshes the project on this.
	msg := fmt.Appendf(nil, `{"event":"link","schema":%d,"message":%q}`, loop.EventSchema, word)
	p.publish(msg)
}

func (p *project) publish(msg []byte) {
	p.hub.Publish(msg, bytes.HasPrefix(msg, []byte(`{"event":"iteration_started"`)))
	wrapped := make([]byte, 0, len(msg)+len(p.id)+20)
	wrapped = append(wrapped, `{"run":"`...)
	wrapped = append(wrapped, p.id...)
	wrapped = append(wrapped, `","event":`...)
	wrapped = append(wrapped, msg...)
	wrapped = append(wrapped, '}')
	p.all.Publish(wrapped, false)
}

// watch keeps the live link up while ctx lasts: whenever the project's
// socket answers, its events are relayed.
func (p *project) watch(ctx context.Context) {
	t := time.NewTicker(relinkEvery)
	defer t.Stop()
	for {
		if _, err := os.Stat(p.socket()); err == nil {
			p.relay(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// relay streams the run's events into the project's hubs until the run
// ends or ctx does.
func (p *project) relay(ctx context.Context) {
	cl := Dial(p.socket())
	defer cl.CloseIdleConnections()
	info, err := getInfo(ctx, cl)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://run/v1/events", http.NoBody)
	if err != nil {
		return
	}
	resp, err := cl.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	p.setLive(true, info)
	defer p.setLive(false, Info{})
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case bytes.HasPrefix(line, []byte("data: ")):
				if msg := line[len("data: "):]; len(msg) > 0 && msg[0] == '{' && !bytes.Equal(msg, []byte("{}")) {
					p.publish(bytes.Clone(msg))
				}
			case bytes.Equal(line, []byte("event: resync")):
				// We were too slow for the run: so are our clients now.
				p.hub.DropAll()
			}
		}
		if err != nil {
			return
		}
	}
}

func getInfo(ctx context.Context, cl *http.Client) (Info, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://run/v1/info", http.NoBody)
	if err != nil {
		return Info{}, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return Info{}, err
	}
	defer resp.Body.Close()
	var info Info
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return Info{}, err
	}
	return info, nil
}

// readState reads the project's state.json without creating anything; a
// project without one has the zero State.
func (p *project) readState() (state.State, error) {
	return state.ReadState(p.dir)
}

// plan loads the run's plan, or the one a run would find.
func (p *project) plan(st state.State) (*task.Plan, error) {
	path := st.Plan
	if path == "" {
		found, err := task.Discover(p.dir)
		if err != nil {
			return nil, err
		}
		path = found
	}
	f, err := task.LoadIn(p.dir, path, true)
	if err != nil {
		return nil, err
	}
	return f.Plan(), nil
}

// history reads the last n lines of history.jsonl (all with n <= 0),
// holding no more than n records at a time.
func (p *project) history(n int) ([]state.Record, error) {
	var out []state.Record
	err := p.eachRecord(func(rec state.Record) {
		if n > 0 && len(out) == n {
			copy(out, out[1:])
			out = out[:n-1]
		}
		out = append(out, rec)
	})
	return out, err
}

// receipt adds up history.jsonl into the receipt per task, a line at a
// time.
func (p *project) receipt() (receipt.Report, error) {
	b := receipt.NewBuilder(receipt.ByTask)
	err := p.eachRecord(b.Add)
	return b.Report(), err
}

// eachRecord calls fn on each line of history.jsonl that decodes, in
// file order; no file is no history.
func (p *project) eachRecord(fn func(state.Record)) error {
	f, err := os.Open(filepath.Join(p.dir, state.Dir, state.HistoryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec state.Record
			if json.Unmarshal(line, &rec) == nil {
				fn(rec)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

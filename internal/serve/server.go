package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/ui"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Dirs are the project directories to watch, besides the registry's.
	Dirs []string
	// StateDir is the user's ralph state directory (StateDir), whose
	// registry adds every run started there; "" for none.
	StateDir string
	// Token, when set, is required of every request: the
	// Authorization: Bearer header, the cookie the page sets, or ?token=
	// on the first page load.
	Token string
	// ControlToken, without Token, is required of every control request
	// (pause, resume, skip, stop, answer), loopback included: whatever
	// runs on this machine reaches loopback, an agent included. Reading
	// needs none. The page gets it as Token: ?token= on the first load,
	// then its cookie. Without either, control is refused.
	ControlToken string
	// ReadOnly refuses every control request.
	ReadOnly bool
	// Log receives what goes wrong in the background; nil drops it.
	Log func(msg string)
}

// Server is the HTTP server of ralph serve: the page and the API over the
// watched projects.
type Server struct {
	opts     Options
	all      *Hub
	mu       sync.Mutex
	projects map[string]*project
	order    []*project
	ctx      context.Context
}

// cookieName holds the token in the browser (HttpOnly: the page's
// scripts never see it).
const cookieName = "ralph_token"

// rescanEvery is how often the registry is read for new runs.
const rescanEvery = 2 * time.Second

// New returns a server; Start begins watching.
func New(opts Options) *Server {
	return &Server{opts: opts, all: &Hub{subs: map[*Sub]struct{}{}, noBacklog: true}, projects: map[string]*project{}, ctx: context.Background()}
}

// Start watches the projects and the registry until ctx is done.
func (s *Server) Start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	for _, d := range s.opts.Dirs {
		s.Add(d)
	}
	s.rescan()
	if s.opts.StateDir == "" {
		return
	}
	go func() {
		t := time.NewTicker(rescanEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.rescan()
			}
		}
	}()
}

func (s *Server) rescan() {
	for _, e := range Registered(s.opts.StateDir) {
		s.Add(e.Dir)
	}
}

// Add watches the project in dir, once.
func (s *Server) Add(dir string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := projectID(abs)
	if _, ok := s.projects[id]; ok {
		return
	}
	p := newProject(abs, s.all)
	s.projects[id] = p
	s.order = append(s.order, p)
	go p.watch(s.ctx)
}

func (s *Server) project(id string) (*project, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[id]
	return p, ok
}

func (s *Server) list() []*project {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// Handler is the server's HTTP handler: the page, the API, and the
// checks every request passes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/v1/runs", s.getRuns)
	mux.HandleFunc("GET /api/v1/runs/{id}", s.getRun)
	mux.HandleFunc("GET /api/v1/runs/{id}/tasks", s.getTasks)
	mux.HandleFunc("GET /api/v1/runs/{id}/history", s.getHistory)
	mux.HandleFunc("GET /api/v1/runs/{id}/transcript", s.getTranscript)
	mux.HandleFunc("GET /api/v1/runs/{id}/events", s.getRunEvents)
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) { streamSSE(w, r, s.all) })
	mux.HandleFunc("POST /api/v1/runs/{id}/{verb}", s.postControl)
	return s.guard(mux)
}

// guard checks every request: the Host (no DNS rebinding onto a loopback
// server), the token when one is set, and for control requests the
// origin. Pages get headers that keep them from being framed or sniffed.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
		// every: the token guards every request; else only control.
		tok, every := s.opts.Token, s.opts.Token != ""
		if !every {
			tok = s.opts.ControlToken
		}
		if !every && !loopbackHost(r.Host) {
			// Without a token the server is for this machine only.
			writeJSON(w, http.StatusForbidden, apiError{Error: "host " + r.Host + " is not loopback"})
			return
		}
		control := r.Method != http.MethodGet && r.Method != http.MethodHead
		if q := r.URL.Query().Get("token"); q != "" && tok != "" && !control && (r.URL.Path == "/" || r.URL.Path == "/index.html") {
			if !tokenOK(q, tok) {
				writeJSON(w, http.StatusUnauthorized, apiError{Error: "wrong token"})
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: q, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 30 * 24 * 3600})
			// The token leaves the address bar and the history.
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if control && !sameOrigin(r) {
			writeJSON(w, http.StatusForbidden, apiError{Error: "cross-origin request refused"})
			return
		}
		if (every || control) && !tokenOK(requestToken(r), tok) {
			writeJSON(w, http.StatusUnauthorized, apiError{Error: "token required: open the address ralph serve printed"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenOK reports whether got is the token want; nothing is when there
// is no token.
func tokenOK(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func requestToken(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && a[:7] == "Bearer " {
		return a[7:]
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return c.Value
	}
	return ""
}

// sameOrigin accepts a request whose Origin is the server itself, or one
// without Origin that a browser did not send cross-site (curl, scripts).
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site == "" || site == "same-origin" || site == "none"
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether addr (host:port) binds loopback only.
func IsLoopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return loopbackHost(h)
}

// RunView is one watched project in the API: its run as state.json says,
// the plan's progress, and whether the run is live.
type RunView struct {
	Schema int    `json:"schema"`
	ID     string `json:"id"`
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Live   bool   `json:"live"`
	// Status is state.json's, or crashed for a run that says it is live
	// while nothing answers and its pid is gone.
	Status       string             `json:"status"`
	RunID        string             `json:"run_id,omitempty"`
	Agent        string             `json:"agent,omitempty"`
	Model        string             `json:"model,omitempty"`
	Iteration    int                `json:"iteration"`
	CurrentTask  string             `json:"current_task,omitempty"`
	StartedAt    *time.Time         `json:"started_at,omitempty"`
	UpdatedAt    *time.Time         `json:"updated_at,omitempty"`
	WaitingUntil *time.Time         `json:"waiting_until,omitempty"`
	Message      string             `json:"message,omitempty"`
	Totals       state.Totals       `json:"totals"`
	Plan         *loop.PlanProgress `json:"plan,omitempty"`
	Questions    []state.Question   `json:"questions,omitempty"`
	// Quota is the account's usage windows as the agent last reported
	// them (state.json's quota).
	Quota map[string]state.QuotaWindow `json:"quota,omitempty"`
	Error string                       `json:"error,omitempty"`
	// Live is the current iteration's events so far (GET /runs/{id}).
	Current []json.RawMessage `json:"current,omitempty"`
}

// TaskView is one task of a run's plan.
type TaskView struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Status    string   `json:"status"`
	Priority  int      `json:"priority,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	Attempts  int      `json:"attempts,omitempty"`
	Question  string   `json:"question,omitempty"`
	// Receipt is what the task took and cost so far, in one line
	// (receipt.Row.Line); empty before its first iteration.
	Receipt string `json:"receipt,omitempty"`
}

func (s *Server) view(p *project) RunView {
	v := RunView{Schema: loop.EventSchema, ID: p.id, Name: filepath.Base(p.dir), Dir: p.dir}
	live, _ := p.Live()
	v.Live = live
	st, err := p.readState()
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Status, v.RunID, v.Agent, v.Model = st.Status, st.RunID, st.Agent, st.Model
	v.Iteration, v.CurrentTask, v.WaitingUntil, v.Message, v.Totals = st.Iteration, st.CurrentTask, st.WaitingUntil, st.Message, st.Totals
	if !st.StartedAt.IsZero() {
		v.StartedAt, v.UpdatedAt = &st.StartedAt, &st.UpdatedAt
	}
	if state.Live(st.Status) && !live && !alive(st.PID) {
		v.Status = state.StatusCrashed
	}
	v.Questions = st.Pending()
	v.Quota = st.Quota
	if pl, err := p.plan(st); err == nil {
		pp := &loop.PlanProgress{Path: relTo(p.dir, pl.Path), Format: pl.Format, Total: len(pl.Tasks)}
		for _, t := range pl.Tasks {
			switch {
			case t.Status == task.StatusDone:
				pp.Done++
			case t.Status == task.StatusFailed || st.Tasks[t.ID].Failed:
				pp.Failed++
			}
		}
		v.Plan = pp
	}
	return v
}

func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

func (s *Server) getRuns(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Schema   int  `json:"schema"`
		ReadOnly bool `json:"read_only"`
		// CanControl says whether this request's control would be let
		// through (the server takes control, and the request carries its
		// token): the page shows its controls enabled only then.
		CanControl bool      `json:"can_control"`
		Runs       []RunView `json:"runs"`
	}{Schema: loop.EventSchema, ReadOnly: s.opts.ReadOnly, CanControl: s.canControl(r), Runs: []RunView{}}
	for _, p := range s.list() {
		out.Runs = append(out.Runs, s.view(p))
	}
	sortRuns(out.Runs)
	writeJSON(w, http.StatusOK, out)
}

// canControl says whether a control request with r's credentials would be
// let through.
func (s *Server) canControl(r *http.Request) bool {
	tok := cmp.Or(s.opts.Token, s.opts.ControlToken)
	return !s.opts.ReadOnly && tokenOK(requestToken(r), tok)
}

// sortRuns puts the live runs first, then the others, each the most
// recently started first; a project that has not run comes last.
func sortRuns(runs []RunView) {
	started := func(v RunView) time.Time {
		if v.StartedAt == nil {
			return time.Time{}
		}
		return *v.StartedAt
	}
	slices.SortStableFunc(runs, func(a, b RunView) int {
		if a.Live != b.Live {
			if a.Live {
				return -1
			}
			return 1
		}
		return started(b).Compare(started(a))
	})
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*project, bool) {
	p, ok := s.project(r.PathValue("id"))
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{Error: "no such run"})
	}
	return p, ok
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	p, ok := s.lookup(w, r)
	if !ok {
		return
	}
	v := s.view(p)
	if v.Live {
		for _, m := range p.hub.Backlog() {
			v.Current = append(v.Current, json.RawMessage(m))
		}
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) getTasks(w http.ResponseWriter, r *http.Request) {
	p, ok := s.lookup(w, r)
	if !ok {
		return
	}
	st, err := p.readState()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
		return
	}
	pl, err := p.plan(st)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
		return
	}
	live, _ := p.Live()
	rep, _ := p.receipt() // no history: no receipts
	lines := map[string]string{}
	for _, row := range rep.Rows {
		lines[row.TaskID] = row.Line()
	}
	tasks := make([]TaskView, 0, len(pl.Tasks))
	for _, t := range pl.Tasks {
		tv := TaskView{ID: t.ID, Title: t.Title, Status: string(t.Status), Priority: t.Priority, DependsOn: t.DependsOn,
			Attempts: st.Tasks[t.ID].Attempts, Receipt: lines[t.ID]}
		switch {
		case t.Status == task.StatusOpen && st.Tasks[t.ID].Failed:
			tv.Status = string(task.StatusFailed)
		case t.Status == task.StatusOpen && live && st.CurrentTask == t.ID:
			tv.Status = "running"
		}
		for _, q := range st.Questions {
			if q.Task == t.ID && q.Answer == "" {
				tv.Status, tv.Question = "waiting", q.Text
			}
		}
		tasks = append(tasks, tv)
	}
	writeJSON(w, http.StatusOK, map[string]any{"schema": loop.EventSchema, "plan": relTo(p.dir, pl.Path), "tasks": tasks,
		"cost": "cost " + rep.Totals.CostLine()})
}

func (s *Server) getHistory(w http.ResponseWriter, r *http.Request) {
	p, ok := s.lookup(w, r)
	if !ok {
		return
	}
	// Bounded: a long run's history is read, never held.
	const maxHistory = 1000
	n := 100
	if q := r.URL.Query().Get("limit"); q != "" {
		if v, err := strconv.Atoi(q); err == nil && v > 0 {
			n = min(v, maxHistory)
		}
	}
	recs, err := p.history(n)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
		return
	}
	if recs == nil {
		recs = []state.Record{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schema": loop.EventSchema, "records": recs})
}

// getTranscript renders an iteration's raw output as `ralph logs` does,
// as plain text.
func (s *Server) getTranscript(w http.ResponseWriter, r *http.Request) {
	p, ok := s.lookup(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	runID, iter := q.Get("run"), q.Get("iteration")
	n, err := strconv.Atoi(iter)
	if err != nil || n < 1 || !validRunID(runID) {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "want ?run=RUN_ID&iteration=N"})
		return
	}
	_, path := state.TranscriptFiles(p.dir, runID, n)
	f, err := os.Open(path)
	if err != nil {
		writeJSON(w, http.StatusNotFound, apiError{Error: "no transcript of that iteration"})
		return
	}
	defer f.Close()
	head := make([]byte, 512)
	k, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
		return
	}
	name := q.Get("agent")
	if name == "" {
		name = agentOf(p, runID, n)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	out := redact.NewWriter(w) // the agent may have printed a secret
	tw := ui.NewTranscriptWriter(out, agent.TranscriptDecoder(name, "", bytes.TrimSpace(head[:k])), ui.TranscriptOptions{})
	_, _ = io.Copy(tw, f)
	_ = tw.Close()
	_ = out.Flush()
}

// agentOf is the agent of an iteration, from history or the state.
func agentOf(p *project, runID string, n int) string {
	recs, _ := p.history(0)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].RunID == runID && recs[i].Iteration == n {
			return recs[i].Agent
		}
	}
	st, _ := p.readState()
	return st.Agent
}

// validRunID keeps a run id from naming a path outside .ralph/runs.
func validRunID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func (s *Server) getRunEvents(w http.ResponseWriter, r *http.Request) {
	p, ok := s.lookup(w, r)
	if !ok {
		return
	}
	streamSSE(w, r, p.hub)
}

// postControl steers a run: pause, resume, skip, stop, answer. A run that
// is not live can only be answered: the answer goes into its state.json
// for the next run.
func (s *Server) postControl(w http.ResponseWriter, r *http.Request) {
	if s.opts.ReadOnly {
		writeJSON(w, http.StatusForbidden, apiError{Error: "read-only server"})
		return
	}
	p, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var cmd Command
	if r.ContentLength != 0 {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&cmd); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "bad body: " + err.Error()})
			return
		}
	}
	cmd.Verb = r.PathValue("verb")
	if cmd.By == "" {
		cmd.By = "page"
	}
	switch cmd.Verb {
	case VerbPause, VerbResume, VerbSkip, VerbStop, VerbAnswer:
	default:
		writeJSON(w, http.StatusNotFound, apiError{Error: "unknown verb " + cmd.Verb})
		return
	}
	if live, _ := p.Live(); !live {
		if cmd.Verb != VerbAnswer {
			writeJSON(w, http.StatusConflict, apiError{Error: "the run is not live"})
			return
		}
		if _, err := AnswerOnDisk(p.dir, cmd.Task, cmd.Text, cmd.By); err != nil {
			writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
		return
	}
	if err := Send(r.Context(), p.socket(), cmd); err != nil {
		writeJSON(w, http.StatusBadGateway, apiError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// AnswerOnDisk records an answer in the state.json of a project whose
// run is not live, for the next run; it takes the project's lock.
func AnswerOnDisk(dir, taskID, text, by string) (state.Question, error) {
	if text == "" {
		return state.Question{}, errors.New("empty answer")
	}
	store, release, err := state.OpenLocked(dir)
	if err != nil {
		return state.Question{}, err
	}
	defer func() { _ = release() }()
	st, err := store.LoadState()
	if err != nil {
		return state.Question{}, err
	}
	q, ok := st.AnswerQuestion(taskID, text, by, time.Now())
	if !ok {
		return q, errors.New("no question is waiting for an answer")
	}
	return q, store.SaveState(st)
}

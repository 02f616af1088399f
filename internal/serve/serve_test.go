package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
)

// project makes a project directory with a plan and a state.json.
func testProject(t *testing.T, st state.State) string {
	t.Helper()
	dir := t.TempDir()
	plan := `{"userStories":[{"id":"A","title":"First","passes":false},{"id":"B","title":"Second","passes":true}]}`
	if err := os.WriteFile(filepath.Join(dir, "prd.json"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Plan = filepath.Join(dir, "prd.json")
	if err := store.SaveState(st); err != nil {
		t.Fatal(err)
	}
	return dir
}

func getJSON(t *testing.T, c *http.Client, url string, v any) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func post(t *testing.T, c *http.Client, url, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// controlToken is the control token of the tests' servers, and bearer
// the header that carries it.
const controlToken = "control-token-0123456789abcdef0123"

func bearer() map[string]string { return map[string]string{"Authorization": "Bearer " + controlToken} }

func TestTokenRequiredOffLoopback(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusDone})
	s := New(Options{Dirs: []string{dir}, Token: "s3cret-token-0123456789abcdef0123"})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	// httptest listens on 127.0.0.1, but the Host a remote browser sends
	// is the server's public name: that is what the check sees.
	for _, path := range []string{"/", "/api/v1/runs", "/api/v1/events", "/app.js"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, http.NoBody)
		req.Host = "box.example:8484"
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d, want 401", path, resp.StatusCode)
		}
	}
	if code := post(t, ts.Client(), ts.URL+"/api/v1/runs/x/pause", "{}", nil); code != http.StatusUnauthorized {
		t.Errorf("POST without token: %d, want 401", code)
	}
	if code := post(t, ts.Client(), ts.URL+"/api/v1/runs/x/pause", "{}", map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Errorf("POST with a wrong token: %d, want 401", code)
	}
	// With the token: the API answers, and no response holds the token.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/api/v1/runs", http.NoBody)
	req.Host = "box.example:8484"
	req.Header.Set("Authorization", "Bearer s3cret-token-0123456789abcdef0123")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	if resp.StatusCode != http.StatusOK || strings.Contains(b.String(), "s3cret") {
		t.Errorf("GET /api/v1/runs with token: %d %s", resp.StatusCode, b.String())
	}
	// The first page load with ?token= sets an HttpOnly cookie and drops
	// the token from the address.
	noRedirect := *ts.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp2, err := noRedirect.Get(ts.URL + "/?token=s3cret-token-0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusSeeOther || resp2.Header.Get("Location") != "/" ||
		!strings.Contains(resp2.Header.Get("Set-Cookie"), "HttpOnly") {
		t.Errorf("token login: %d, Location %q, Set-Cookie %q", resp2.StatusCode, resp2.Header.Get("Location"), resp2.Header.Get("Set-Cookie"))
	}
}

// TestControlNeedsTheTokenOnLoopback: on loopback, reading needs no
// token but control does, whatever the Host: an agent on this machine
// reaches loopback too. The page gets the token from the address printed.
func TestControlNeedsTheTokenOnLoopback(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusDone})
	s := New(Options{Dirs: []string{dir}, ControlToken: controlToken})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if code := getJSON(t, ts.Client(), ts.URL+"/api/v1/runs", nil); code != http.StatusOK {
		t.Errorf("reading on loopback: %d, want 200", code)
	}
	base := ts.URL + "/api/v1/runs/" + projectID(s.list()[0].dir)
	for name, hdr := range map[string]map[string]string{"no token": nil, "a wrong one": {"Authorization": "Bearer wrong"}} {
		if code := post(t, ts.Client(), base+"/stop", "", hdr); code != http.StatusUnauthorized {
			t.Errorf("stop with %s: %d, want 401", name, code)
		}
	}
	if code := post(t, ts.Client(), base+"/stop", "", bearer()); code == http.StatusUnauthorized {
		t.Errorf("stop with the token: %d", code)
	}
	// No token at all: no control.
	bare := httptest.NewServer(New(Options{Dirs: []string{dir}}).Handler())
	defer bare.Close()
	if code := post(t, bare.Client(), bare.URL+"/api/v1/runs/x/stop", "", nil); code != http.StatusUnauthorized {
		t.Errorf("stop on a server without a token: %d, want 401", code)
	}
}

func TestNoTokenServesLoopbackHostsOnly(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/api/v1/runs", http.NoBody)
	req.Host = "evil.example" // DNS rebinding onto 127.0.0.1
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", resp.StatusCode)
	}
	if code := getJSON(t, ts.Client(), ts.URL+"/api/v1/runs", nil); code != http.StatusOK {
		t.Errorf("loopback: %d", code)
	}
	if code := post(t, ts.Client(), ts.URL+"/api/v1/runs/x/pause", "{}", map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d, want 403", code)
	}
}

// liveRun is a run's control channel in this test, as `ralph run` serves
// it: the server reaches it through the socket only.
func liveRun(t *testing.T, dir string) (*Channel, *loop.Steering, chan struct{}) {
	t.Helper()
	steer := loop.NewSteering()
	stopped := make(chan struct{})
	ch, err := Listen(dir, Info{RunID: "r1", Dir: dir, PID: os.Getpid()}, Steer{Steering: steer,
		Stop: func() { close(stopped) }, Current: func() string { return "A" }})
	if err != nil {
		t.Fatalf("no unix socket: %v", err)
	}
	t.Cleanup(func() { ch.Close(nil) })
	return ch, steer, stopped
}

// waitLive waits until the server linked the project's run: its event
// stream says so.
func waitLive(t *testing.T, c *http.Client, base, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/runs/"+id+"/events", http.NoBody)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v RunView
	if getJSON(t, c, base+"/api/v1/runs/"+id, &v); v.Live {
		return
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"message":"linked"`) {
			return
		}
	}
	t.Fatal("the server never linked the run")
}

func TestControlReachesARunThroughItsSocket(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusRunning, PID: os.Getpid(), CurrentTask: "A",
		Questions: []state.Question{{Task: "A", Text: "v1 or v2?", RunID: "r1", Iteration: 1}}})
	ch, steer, stopped := liveRun(t, dir)
	s := New(Options{Dirs: []string{dir}, ControlToken: controlToken})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	id := projectID(s.list()[0].dir)
	waitLive(t, ts.Client(), ts.URL, id)

	base := ts.URL + "/api/v1/runs/" + id
	if code := post(t, ts.Client(), base+"/pause", "", bearer()); code != http.StatusOK {
		t.Fatalf("pause: %d", code)
	}
	if steer.Paused() == nil {
		t.Error("pause did not pause the run")
	}
	if code := post(t, ts.Client(), base+"/resume", "", bearer()); code != http.StatusOK || steer.Paused() != nil {
		t.Errorf("resume: %d, paused %v", code, steer.Paused() != nil)
	}
	if code := post(t, ts.Client(), base+"/skip", "{}", bearer()); code != http.StatusOK {
		t.Errorf("skip: %d", code)
	}
	if got := steer.Skips(); len(got) != 1 || got[0] != "A" {
		t.Errorf("skips = %v, want the current task A", got)
	}
	if code := post(t, ts.Client(), base+"/answer", `{"task":"A","text":"v2"}`, bearer()); code != http.StatusOK {
		t.Errorf("answer: %d", code)
	}
	if got := steer.TakeAnswers(); len(got) != 1 || got[0] != (loop.Answer{Task: "A", Text: "v2", By: "page"}) {
		t.Errorf("answers = %+v", got)
	}
	if code := post(t, ts.Client(), base+"/stop", "", bearer()); code != http.StatusOK {
		t.Errorf("stop: %d", code)
	}
	<-stopped

	// The run's events reach the page's stream.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/v1/events", http.NoBody)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // retry: line
		t.Fatal(err)
	}
	ch.Handle(loop.Event{Kind: loop.EventQuestion, Task: &loop.TaskRef{ID: "A"}, Message: "v1 or v2?"})
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"event":"question"`) {
			if !strings.Contains(line, `"run":"`+id+`"`) || !strings.Contains(line, `"schema":1`) {
				t.Errorf("event line %s", line)
			}
			break
		}
	}
	var v RunView
	getJSON(t, ts.Client(), base, &v)
	if !v.Live || len(v.Questions) != 1 || v.Questions[0].Text != "v1 or v2?" {
		t.Errorf("run view: live %v, questions %+v", v.Live, v.Questions)
	}
}

func TestReadOnlyRefusesControl(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusDone})
	s := New(Options{Dirs: []string{dir}, ReadOnly: true, ControlToken: controlToken})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if code := post(t, ts.Client(), ts.URL+"/api/v1/runs/"+projectID(s.list()[0].dir)+"/pause", "", bearer()); code != http.StatusForbidden {
		t.Errorf("pause on a read-only server: %d, want 403", code)
	}
}

func TestAnswerWithoutALiveRunGoesToStateForTheNextRun(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusStopped,
		Questions: []state.Question{{Task: "A", Text: "which db?"}}})
	s := New(Options{Dirs: []string{dir}, ControlToken: controlToken})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	base := ts.URL + "/api/v1/runs/" + projectID(s.list()[0].dir)
	if code := post(t, ts.Client(), base+"/pause", "", bearer()); code != http.StatusConflict {
		t.Errorf("pause of a finished run: %d, want 409", code)
	}
	if code := post(t, ts.Client(), base+"/answer", `{"text":"postgres"}`, bearer()); code != http.StatusOK {
		t.Fatalf("answer: %d", code)
	}
	store, _ := state.Open(dir)
	st, _ := store.LoadState()
	if len(st.Questions) != 1 || st.Questions[0].Answer != "postgres" || st.Questions[0].By != "page" {
		t.Errorf("questions = %+v", st.Questions)
	}
	var tasks struct{ Tasks []TaskView }
	getJSON(t, ts.Client(), base+"/tasks", &tasks)
	if len(tasks.Tasks) != 2 || tasks.Tasks[0].Status != "open" || tasks.Tasks[1].Status != "done" {
		t.Errorf("tasks = %+v", tasks.Tasks)
	}
}

func TestSlowClientIsDroppedAndResyncs(t *testing.T) {
	t.Parallel()
	h := NewHub()
	slow := h.Subscribe()
	fast := h.Subscribe()
	got := 0
	for i := range clientBuffer + 10 {
		h.Publish([]byte(`{"event":"agent"}`), i == 0)
		// The fast client keeps up; the slow one reads nothing.
		<-fast.C
		got++
	}
	if !h.Dropped(slow) || h.Dropped(fast) {
		t.Fatalf("dropped: slow %v, fast %v", h.Dropped(slow), h.Dropped(fast))
	}
	n := 0
	for range slow.C { // closed: drained, then the stream ends
		n++
	}
	if n != clientBuffer+1 {
		t.Errorf("the slow client got %d batches before the drop, want its buffer's %d", n, clientBuffer+1)
	}
	if h.Clients() != 1 || got != clientBuffer+10 {
		t.Errorf("clients %d, fast got %d", h.Clients(), got)
	}

	// Over HTTP: a dropped client is told to resync.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { streamSSE(w, r, h) }))
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if h.Clients() < 2 {
		// The handler subscribes before its first write, and the retry
		// line came after.
		t.Fatal("the stream's client is not subscribed")
	}
	h.DropAll()
	var sawResync bool
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		sawResync = sawResync || strings.TrimSpace(line) == "event: resync"
	}
	if !sawResync {
		t.Error("a dropped stream ended without a resync event")
	}
}

func TestControlChannelInADeepProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for len(dir) < 120 {
		dir = filepath.Join(dir, "a-rather-long-directory-name")
	}
	if err := os.MkdirAll(filepath.Join(dir, state.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	ch, steer, _ := liveRun(t, dir)
	if len(ch.Path()) <= maxSockPath {
		t.Fatalf("the path is short: %s", ch.Path())
	}
	if err := Send(t.Context(), ch.Path(), Command{Verb: VerbPause}); err != nil {
		t.Fatal(err)
	}
	if steer.Paused() == nil {
		t.Error("the pause did not reach the run")
	}
}

// The loop goes on changing what its events point to (the run's totals);
// the channel encodes them later, on its own goroutine: go test -race
// finds it when Handle does not copy them.
func TestChannelCopiesWhatTheLoopKeepsChanging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, state.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	ch, _, _ := liveRun(t, dir)
	br := subscribe(t, ch)
	var totals state.Totals
	for i := range 100 {
		ch.Handle(loop.Event{Kind: loop.EventIterationEnded, Iteration: i, Totals: &totals})
		totals.Iterations++
	}
	ch.Handle(loop.Event{Kind: loop.EventRunEnded})
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"event":"run_ended"`) {
			return
		}
	}
}

// subscribe reads the channel's event stream from its socket, past the
// stream's opening line.
func subscribe(t *testing.T, ch *Channel) *bufio.Reader {
	t.Helper()
	cl := Dial(ch.Path())
	t.Cleanup(cl.CloseIdleConnections)
	resp, err := cl.Get("http://run/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return br
}

// While nobody listens the channel keeps the current iteration's events
// unencoded, the newest backlogSize of them; a subscriber that comes
// starts with them, in order, and with nothing of the iterations before,
// then gets what follows live.
func TestChannelHeldEventsReachALateSubscriber(t *testing.T) {
	t.Parallel()
	say := func(text string) loop.Event {
		return loop.Event{Kind: loop.EventAgent, Agent: &agent.Event{Kind: agent.EventText, Text: text}}
	}
	for _, tc := range []struct {
		name string
		held int // agent events of the second iteration before anyone listens
		want []string
	}{
		{"an iteration's start drops the one before", 3,
			[]string{"iteration_started 2", "second 000", "second 001", "second 002", "live"}},
		{"the newest are kept", backlogSize + 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, state.Dir), 0o755); err != nil {
				t.Fatal(err)
			}
			ch, _, _ := liveRun(t, dir)
			ch.Handle(loop.Event{Kind: loop.EventIterationStarted, Iteration: 1})
			ch.Handle(say("first iteration"))
			ch.Handle(loop.Event{Kind: loop.EventIterationEnded, Iteration: 1})
			ch.Handle(loop.Event{Kind: loop.EventIterationStarted, Iteration: 2})
			for i := range tc.held {
				ch.Handle(say(fmt.Sprintf("second %03d", i)))
			}
			ch.inflight.Wait() // all of them held before anyone listens
			br := subscribe(t, ch)
			ch.Handle(say("live"))
			var got []string
			for len(got) == 0 || got[len(got)-1] != "live" {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
				if !ok {
					continue
				}
				var e loop.Event
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					t.Fatalf("%q: %v", data, err)
				}
				if e.Schema != loop.EventSchema {
					t.Errorf("%q: schema %d", data, e.Schema)
				}
				if e.Agent != nil {
					got = append(got, e.Agent.Text)
				} else {
					got = append(got, fmt.Sprintf("%s %d", e.Kind, e.Iteration))
				}
			}
			want := tc.want
			if want == nil {
				for i := tc.held - backlogSize; i < tc.held; i++ {
					want = append(want, fmt.Sprintf("second %03d", i))
				}
				want = append(want, "live")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTranscriptRedacted: the transcript page hides the secrets the agent
// printed, as ralph logs does.
func TestTranscriptRedacted(t *testing.T) {
	t.Parallel()
	const runID = "20261127-050536-7d2879"
	dir := testProject(t, state.State{RunID: runID, Status: state.StatusDone, Agent: "command"})
	_, out := state.TranscriptFiles(dir, runID, 1)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := "connecting to postgres://app:PASSWORD@db/app\nwith ghp_0123456789abcdefghijABCDEFGHIJ\n"
	if err := os.WriteFile(out, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Dirs: []string{dir}, ReadOnly: true, ControlToken: controlToken})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	url := ts.URL + "/api/v1/runs/" + projectID(s.list()[0].dir) + "/transcript?run=" + runID + "&iteration=1&agent=command"
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "PASSWORD") || strings.Contains(string(body), "ghp_0123") ||
		!strings.Contains(string(body), "postgres://app:<redacted>@db/app") {
		t.Errorf("GET transcript: %d %q", resp.StatusCode, body)
	}
}

// TestRunsSayWhetherControlIsLetThrough: the page shows its controls
// enabled only when its request carries the token on a server that takes
// control.
func TestRunsSayWhetherControlIsLetThrough(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusDone})
	for _, tc := range []struct {
		name     string
		readOnly bool
		hdr      map[string]string
		want     bool
	}{
		{"no token", false, nil, false},
		{"the token", false, bearer(), true},
		{"the token, read-only", true, bearer(), false},
	} {
		s := New(Options{Dirs: []string{dir}, ControlToken: controlToken, ReadOnly: tc.readOnly})
		s.Start(t.Context())
		ts := httptest.NewServer(s.Handler())
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/api/v1/runs", http.NoBody)
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			CanControl bool `json:"can_control"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		ts.Close()
		if err != nil || body.CanControl != tc.want {
			t.Errorf("%s: can_control %v (%v), want %v", tc.name, body.CanControl, err, tc.want)
		}
	}
}

// TestSortRuns: live runs first, then the latest started; one that never
// ran last.
func TestSortRuns(t *testing.T) {
	t.Parallel()
	at := func(h int) *time.Time { x := time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC); return &x }
	runs := []RunView{
		{ID: "never"},
		{ID: "old", StartedAt: at(1)},
		{ID: "live-old", Live: true, StartedAt: at(2)},
		{ID: "new", StartedAt: at(5)},
		{ID: "live-new", Live: true, StartedAt: at(3)},
	}
	sortRuns(runs)
	var got []string
	for _, r := range runs {
		got = append(got, r.ID)
	}
	if diff := cmp.Diff([]string{"live-new", "live-old", "new", "old", "never"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// The page shows each task's receipt, and the run's cost per verified
// task under them.
func TestTasksCarryTheirReceipt(t *testing.T) {
	t.Parallel()
	dir := testProject(t, state.State{RunID: "r1", Status: state.StatusDone})
	store, _ := state.Open(dir)
	for _, rec := range []state.Record{
		{RunID: "r1", Iteration: 1, TaskID: "B", Attempt: 1, Agent: "claude", Model: "sonnet", Outcome: state.OutcomeGateFailed,
			InputTokens: 100, OutputTokens: 10, CostUSD: 0.1, CostSource: state.CostReported},
		{RunID: "r1", Iteration: 2, TaskID: "B", Attempt: 2, Agent: "claude", Model: "sonnet", Outcome: state.OutcomeTaskDone,
			InputTokens: 200, OutputTokens: 20, CostUSD: 0.2, CostSource: state.CostReported,
			Gates: []state.GateRun{{Command: "true", Result: "ok"}}, Guard: &state.GuardEvidence{Mode: "warn"}},
	} {
		if err := store.AppendHistory(rec); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{Dirs: []string{dir}})
	s.Start(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	var body struct {
		Tasks []TaskView
		Cost  string
	}
	getJSON(t, ts.Client(), ts.URL+"/api/v1/runs/"+projectID(s.list()[0].dir)+"/tasks", &body)
	if len(body.Tasks) != 2 || body.Tasks[0].Receipt != "" {
		t.Fatalf("tasks = %+v; want A without a receipt (it never ran)", body.Tasks)
	}
	// 0.1 + 0.2 for the one task verified.
	if got, want := body.Tasks[1].Receipt, "2 attempts · sonnet · 330 tokens · cost $0.3000 · verified"; got != want {
		t.Errorf("B's receipt %q, want %q", got, want)
	}
	if want := "cost $0.3000 · per verified task $0.3000"; body.Cost != want {
		t.Errorf("cost %q, want %q", body.Cost, want)
	}
}

package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
)

// fakeTelegram is the Bot API as far as questions go: sendMessage gives
// each message an id; getUpdates answers, once a question was sent, with a
// message in another chat, one that replies to nothing, and the reply.
type fakeTelegram struct {
	mu      sync.Mutex
	sent    []string
	offsets []float64
	replied bool
}

func (f *fakeTelegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/bot123:TOKEN/sendMessage":
		var m struct{ Text string }
		_ = json.Unmarshal(body, &m)
		f.sent = append(f.sent, m.Text)
		_, _ = w.Write([]byte(`{"ok":true,"result":{"message_id":` + map[bool]string{true: "77", false: "70"}[strings.Contains(m.Text, "asks:")] + `}}`))
	case "/bot123:TOKEN/getUpdates":
		var q struct {
			Offset float64 `json:"offset"`
		}
		_ = json.Unmarshal(body, &q)
		f.offsets = append(f.offsets, q.Offset)
		if f.replied {
			_, _ = w.Write([]byte(`{"ok":true,"result":[]}`))
			return
		}
		f.replied = true
		_, _ = w.Write([]byte(`{"ok":true,"result":[
			{"update_id":5,"message":{"message_id":78,"chat":{"id":99},"text":"not our chat","reply_to_message":{"message_id":77}}},
			{"update_id":6,"message":{"message_id":79,"chat":{"id":42},"text":"no reply"}},
			{"update_id":7,"message":{"message_id":80,"chat":{"id":42},"text":"hi, not hello","reply_to_message":{"message_id":77}}}]}`))
	default:
		http.NotFound(w, r)
	}
}

func TestTelegramReplyAnswersTheQuestion(t *testing.T) {
	t.Parallel()
	fake := &fakeTelegram{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := config.Defaults().Notify
	cfg.TelegramAPI, cfg.TelegramToken, cfg.TelegramChatID = srv.URL, "123:TOKEN", "42"
	answers := make(chan [2]string, 4)
	n, err := New(cfg, Options{Dir: t.TempDir(), PageURL: func() string { return "http://127.0.0.1:8484/" },
		Answer: func(task, text string) { answers <- [2]string{task, text} }})
	if err != nil {
		t.Fatal(err)
	}
	n.Handle(loop.Event{Kind: loop.EventRunStarted, Time: t0, Plan: &loop.PlanProgress{Total: 1}})
	n.Handle(loop.Event{Kind: loop.EventQuestion, Time: t0, Task: &loop.TaskRef{ID: "US-001"}, Message: "hello or hi?"})
	got := <-answers
	n.Close(nil)
	if got != [2]string{"US-001", "hi, not hello"} {
		t.Errorf("answer = %q", got)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.sent) != 2 || !strings.Contains(fake.sent[1], "US-001 asks: hello or hi?") ||
		!strings.Contains(fake.sent[1], "http://127.0.0.1:8484/") {
		t.Errorf("messages sent: %q", fake.sent)
	}
	if len(answers) != 0 {
		t.Errorf("more answers than the one reply: %v", <-answers)
	}
}

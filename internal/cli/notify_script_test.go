package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// notifysink CONFIG LOG: serve, on 127.0.0.1, as Slack, Discord, Telegram,
// ntfy and a JSON webhook, for as long as the script runs; write CONFIG, a
// ralph.toml whose [notify] points every target at the sink (and a
// command target that appends to LOG too); append "TARGET EVENT" to LOG
// for each notification received.
func cmdNotifySink(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: notifysink CONFIG LOG")
	}
	logPath := ts.MkAbs(args[1])
	var mu sync.Mutex
	record := func(target, event string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		fmt.Fprintf(f, "%s %s\n", target, event)
		f.Close()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		switch {
		case r.URL.Path == "/slack":
			record("slack", eventIn(fmt.Sprint(m["text"])))
		case r.URL.Path == "/discord":
			record("discord", eventIn(fmt.Sprint(m["content"])))
		case r.URL.Path == "/tg/bot7:TGSECRET/sendMessage" && m["chat_id"] == "99":
			record("telegram", eventIn(fmt.Sprint(m["text"])))
			_, _ = w.Write([]byte(`{"ok":true}`))
		case r.URL.Path == "/ntfy/ntfysecret":
			record("ntfy", strings.ReplaceAll(strings.TrimPrefix(r.Header.Get("Title"), "ralph: "), " ", "_"))
		case r.URL.Path == "/hook" && r.Header.Get("Authorization") == "Bearer HOOKSECRET":
			record("webhook", fmt.Sprint(m["event"]))
		default:
			http.Error(w, "unexpected request "+r.URL.Path, http.StatusNotFound)
		}
	}))
	ts.Defer(srv.Close)
	u := srv.URL
	config := fmt.Sprintf(`[notify]
retries = 1
slack-webhook = "%[1]s/slack"
discord-webhook = "%[1]s/discord"
telegram-api = "%[1]s/tg"
telegram-token = "7:TGSECRET"
telegram-chat-id = "99"
ntfy-server = "%[1]s/ntfy"
ntfy-topic = "ntfysecret"
webhook-url = "%[1]s/hook"
webhook-headers = ["Authorization: Bearer HOOKSECRET"]
command = "echo command $RALPH_EVENT >> %[2]s"
`, u, logPath)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(config), 0o644))
}

// eventIn reads the event back from a chat message.
func eventIn(text string) string {
	for _, m := range []struct{ marker, event string }{
		{"run started", "started"}, {"✓ ", "task_done"}, {"✗ ", "task_failed"},
		{"usage limit hit", "waiting_for_limit"}, {"tasks done ($", "completed"}, {": run ", "stopped"},
	} {
		if strings.Contains(text, m.marker) {
			return m.event
		}
	}
	return "unknown:" + text
}

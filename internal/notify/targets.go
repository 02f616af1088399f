package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// httpTarget posts requests.
type httpTarget struct{ client *http.Client }

// statusError is a response that was not a success.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string {
	if e.body == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.body)
}

// isPermanent says a retry cannot help: the target rejected the request
// itself (a bad address or token), not a passing failure.
func isPermanent(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code >= 400 && se.code < 500 && se.code != http.StatusRequestTimeout && se.code != http.StatusTooManyRequests
	}
	return false
}

// post sends body to rawURL and reads the answer.
func (h httpTarget) post(ctx context.Context, rawURL, contentType string, body []byte, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "ralph")
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// The URL is a secret: say what failed, not where.
			return nil, fmt.Errorf("POST failed: %w", ue.Err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return answer, &statusError{code: resp.StatusCode, body: oneLine(string(answer), 200)}
	}
	return answer, nil
}

func postJSON(ctx context.Context, h httpTarget, rawURL string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return h.post(ctx, rawURL, "application/json", body, nil)
}

// slack posts to an incoming webhook.
type slack struct {
	httpTarget
	url string
}

func (slack) name() string { return "slack" }
func (s slack) send(ctx context.Context, e Event) error {
	_, err := postJSON(ctx, s.httpTarget, s.url, map[string]string{"text": e.Text})
	return err
}

// discord posts to a channel webhook (2000 characters at most).
type discord struct {
	httpTarget
	url string
}

func (discord) name() string { return "discord" }
func (d discord) send(ctx context.Context, e Event) error {
	_, err := postJSON(ctx, d.httpTarget, d.url, map[string]string{"content": cut(e.Text, 2000)})
	return err
}

// telegram sends a message through the Bot API.
type telegram struct {
	httpTarget
	api, token, chat string
	// replies, when set, is told which message asked a question.
	replies *telegramReplies
}

func (telegram) name() string { return "telegram" }
func (t telegram) send(ctx context.Context, e Event) error {
	answer, err := postJSON(ctx, t.httpTarget, t.api+"/bot"+t.token+"/sendMessage",
		map[string]string{"chat_id": t.chat, "text": cut(e.Text, 4096)})
	if err != nil {
		return err
	}
	var r struct {
		OK          bool   `json:"ok"`
		Description string `json:"description"`
		Result      struct {
			MessageID int64 `json:"message_id"`
		} `json:"result"`
	}
	if json.Unmarshal(answer, &r) == nil && !r.OK {
		return fmt.Errorf("telegram: %s", r.Description)
	}
	if t.replies != nil && e.Event == "question" && e.Task != nil && r.Result.MessageID != 0 {
		t.replies.sent(r.Result.MessageID, e.Task.ID)
	}
	return nil
}

// ntfy publishes to a topic.
type ntfy struct {
	httpTarget
	server, topic, token string
}

func (ntfy) name() string { return "ntfy" }
func (n ntfy) send(ctx context.Context, e Event) error {
	h := http.Header{}
	h.Set("Title", "ralph: "+strings.ReplaceAll(e.Event, "_", " "))
	h.Set("Tags", ntfyTag(e.Event))
	if e.Event == "task_failed" || e.Event == "stopped" {
		h.Set("Priority", "high")
	}
	if n.token != "" {
		h.Set("Authorization", "Bearer "+n.token)
	}
	_, err := n.post(ctx, n.server+"/"+url.PathEscape(n.topic), "text/plain; charset=utf-8", []byte(e.Text), h)
	return err
}

func ntfyTag(event string) string {
	switch event {
	case "task_done", "completed":
		return "white_check_mark"
	case "task_failed", "stopped":
		return "warning"
	case "waiting_for_limit":
		return "hourglass"
	case "agent_switched":
		return "arrows_counterclockwise"
	case "question":
		return "question"
	}
	return "robot"
}

// webhook posts the event as JSON.
type webhook struct {
	httpTarget
	url    string
	header http.Header
}

func (webhook) name() string { return "webhook" }
func (w webhook) send(ctx context.Context, e Event) error {
	_, err := w.post(ctx, w.url, "application/json", payload(e), w.header)
	return err
}

// cut shortens s to at most n runes.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func oneLine(s string, n int) string {
	return cut(strings.Join(strings.Fields(s), " "), n)
}

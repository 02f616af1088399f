package notify

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// replyPoll is how long one getUpdates call waits for a message (Telegram's
// long polling); replyRetry the pause after a failed call.
const (
	replyPoll  = 25 * time.Second
	replyRetry = 5 * time.Second
)

// telegramReplies takes the answers to questions sent to Telegram: a
// reply to a question's message answers that question. It polls the Bot
// API (getUpdates) only while a question waits.
type telegramReplies struct {
	t      telegram
	answer func(task, text string)
	mu     sync.Mutex
	asked  map[int64]string // message id → task
	wake   chan struct{}
}

func newTelegramReplies(answer func(task, text string)) *telegramReplies {
	return &telegramReplies{answer: answer, asked: map[int64]string{}, wake: make(chan struct{}, 1)}
}

// sent remembers the message that asked task's question.
func (r *telegramReplies) sent(messageID int64, task string) {
	r.mu.Lock()
	r.asked[messageID] = task
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *telegramReplies) waiting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked) > 0
}

// run polls for replies until ctx ends.
func (r *telegramReplies) run(ctx context.Context) {
	var offset int64
	for {
		if !r.waiting() {
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
				continue
			}
		}
		next, err := r.poll(ctx, offset)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t := time.NewTimer(replyRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		offset = next
	}
}

type update struct {
	UpdateID int64 `json:"update_id"`
	Message  *struct {
		Text string `json:"text"`
		Chat struct {
			ID int64 `json:"id"`
		} `json:"chat"`
		ReplyTo *struct {
			MessageID int64 `json:"message_id"`
		} `json:"reply_to_message"`
	} `json:"message"`
}

// poll reads the updates from offset on and answers the questions they
// reply to; it returns the next offset.
func (r *telegramReplies) poll(ctx context.Context, offset int64) (int64, error) {
	body := map[string]any{"timeout": int(replyPoll / time.Second), "allowed_updates": []string{"message"}}
	if offset > 0 {
		body["offset"] = offset
	}
	pctx, cancel := context.WithTimeout(ctx, replyPoll+10*time.Second)
	defer cancel()
	raw, err := postJSON(pctx, r.t.httpTarget, r.t.api+"/bot"+r.t.token+"/getUpdates", body)
	if err != nil {
		return offset, err
	}
	var res struct {
		OK     bool     `json:"ok"`
		Result []update `json:"result"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return offset, err
	}
	for _, u := range res.Result {
		offset = max(offset, u.UpdateID+1)
		m := u.Message
		if m == nil || m.ReplyTo == nil || m.Text == "" || strconv.FormatInt(m.Chat.ID, 10) != r.t.chat {
			continue
		}
		r.mu.Lock()
		task, ok := r.asked[m.ReplyTo.MessageID]
		delete(r.asked, m.ReplyTo.MessageID)
		r.mu.Unlock()
		if ok {
			r.answer(task, m.Text)
		}
	}
	return offset, nil
}

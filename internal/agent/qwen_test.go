package agent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Qwen Code counts input the OpenAI way: input_tokens already includes the
// cached tokens. Claude's shape counts them apart, so the same numbers
// mean different things and must not be added twice.
func TestQwenInputIncludesCache(t *testing.T) {
	t.Parallel()
	stream := `{"type":"assistant","session_id":"q","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1000,"output_tokens":10,"cache_read_input_tokens":800}}}
{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok <promise>TASK_DONE</promise>","session_id":"q","usage":{"input_tokens":1000,"output_tokens":10,"cache_read_input_tokens":800}}
`
	for _, tt := range []struct {
		agent string
		want  Usage
	}{
		{"qwen", Usage{InputTokens: 200, OutputTokens: 10, CacheReadTokens: 800}},
		{"claude", Usage{InputTokens: 1000, OutputTokens: 10, CacheReadTokens: 800}},
	} {
		a, err := New(tt.agent, Options{})
		if err != nil {
			t.Fatal(err)
		}
		dec := a.NewDecoder()
		for line := range strings.SplitSeq(strings.TrimSpace(stream), "\n") {
			dec.Line([]byte(line), func(Event) {})
		}
		if diff := cmp.Diff(tt.want, dec.Finish().Usage); diff != "" {
			t.Errorf("%s usage (-want +got):\n%s", tt.agent, diff)
		}
	}
}

// Package fakeagent is a scriptable stand-in for an agent CLI, for tests
// and benchmarks only: the product never depends on it.
//
// It speaks Claude Code's stream-json (or plain text) and follows a
// scenario file named by $FAKEAGENT_SCRIPT. Blocks separated by lines of
// "---" are used one per invocation (the last one repeats); a counter file
// beside the scenario remembers how many invocations there were. Each line
// of a block is a directive:
//
//	format claude|codex|text output dialect (default claude); codex is
//	                         Codex's exec --json: say, tool, usage and error only
//	say TEXT                 an assistant text message
//	tool NAME ARG            an assistant tool call and its result (ARG echoed)
//	toolresult TEXT          a tool result (what a tool printed)
//	echo-prompt              the prompt, as a tool result (claude) or text
//	exec SHELL               run a shell command in the working directory ($FAKEAGENT_PROMPT is the prompt)
//	pass FILE ID             set passes: true for story ID in a prd.json
//	touch FILE               create FILE (a signal to the test)
//	sleep DURATION           sleep, exiting early if ralph dies
//	ignore-term              ignore SIGTERM from here on
//	grandchild               start a child that ignores SIGTERM; its pid goes to $FAKEAGENT_SCRIPT.grandchild
//	bigline BYTES            one JSON line of about BYTES bytes
//	stream BYTES             about BYTES of ordinary assistant lines
//	toolstream BYTES LINE    about BYTES of Bash tool calls, each with a result line of about LINE bytes
//	mix AGENT FIXTURE BIG LINE TOTAL
//	                         AGENT's own dialect (see Dialects), built from its recorded sample FIXTURE:
//	                         one BIG-byte tool result line, then tool calls with LINE-byte results, to
//	                         about TOTAL bytes; the sample's last lines end the run
//	fetch URL                ($VARS expanded) GET URL through $HTTPS_PROXY or $HTTP_PROXY, loopback included, as Node's
//	                         and Rust's clients do; the status and body are the tool result
//	dial ADDR                ($VARS expanded) connect to host:port, or @NAME (an abstract unix socket), without a proxy
//	usage IN OUT [CR CW]     token usage of the result
//	cost USD                 cost of the result
//	error STATUS TEXT        end with is_error and api_error_status STATUS
//	limit SECONDS            a rejected rate_limit_event resetting in SECONDS, then a 429 usage-limit result
//	quota STATUS WINDOW PCT SECONDS
//	                         a rate_limit_event: STATUS (allowed, allowed_warning) of WINDOW (seven_day),
//	                         PCT percent used (- for none), resetting in SECONDS
//	final TEXT               the final result text (default: the last say)
//	noresult                 end without a result line
//	exit N                   exit code (default 0)
//	if-prompt TEXT           the directives up to the next if-prompt or end-if
//	                         apply only when the prompt contains TEXT
//	end-if                   the directives after it apply whatever the prompt
//
// TEXT may use \n for newlines. The prompt read from stdin (or given as the
// last argument) is written to $FAKEAGENT_PROMPTS/prompt-N.txt when that
// variable is set.
package fakeagent

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Main runs the fake agent and returns its exit code.
func Main() int {
	script := os.Getenv("FAKEAGENT_SCRIPT")
	if script == "" {
		fmt.Fprintln(os.Stderr, "fakeagent: FAKEAGENT_SCRIPT is not set")
		return 2
	}
	n, err := nextInvocation(script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		return 2
	}
	block, err := readBlock(script, n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		return 2
	}
	prompt := readPrompt()
	if dir := os.Getenv("FAKEAGENT_PROMPTS"); dir != "" {
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("prompt-%d.txt", n)), []byte(prompt), 0o644)
	}
	a := &agentRun{w: bufio.NewWriterSize(os.Stdout, 64<<10), prompt: prompt, script: script, format: "claude",
		session: fmt.Sprintf("fake-session-%d", n)}
	defer a.w.Flush()
	return a.play(block)
}

// nextInvocation increments the counter beside the script: 1 for the first
// invocation. The counter file is locked while it is read and written, so
// that the count holds when several run at once (the end review's
// reviewers).
func nextInvocation(script string) (int, error) {
	f, err := os.OpenFile(script+".count", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	n++
	if err := f.Truncate(0); err != nil {
		return 0, err
	}
	_, err = f.WriteAt([]byte(strconv.Itoa(n)), 0)
	return n, err
}

func readBlock(script string, n int) ([]string, error) {
	b, err := os.ReadFile(script)
	if err != nil {
		return nil, err
	}
	var blocks [][]string
	cur := []string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "---" {
			blocks = append(blocks, cur)
			cur = []string{}
			continue
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			cur = append(cur, t)
		}
	}
	blocks = append(blocks, cur)
	return blocks[min(n, len(blocks))-1], nil
}

// readPrompt takes the prompt from stdin unless stdin is a terminal or
// /dev/null, else from the last argument.
func readPrompt() string {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		b, _ := io.ReadAll(os.Stdin)
		if len(b) > 0 {
			return string(b)
		}
	}
	if len(os.Args) > 1 {
		return os.Args[len(os.Args)-1]
	}
	return ""
}

type agentRun struct {
	w        *bufio.Writer
	prompt   string
	script   string
	format   string
	session  string
	last     string
	final    *string
	usage    [4]int64
	cost     float64
	errCode  int
	errText  string
	noResult bool
	exit     int
	tools    int
	items    int
}

func (a *agentRun) play(block []string) int {
	if len(block) == 0 || block[0] != "format codex" {
		a.emit(map[string]any{"type": "system", "subtype": "init", "session_id": a.session, "model": "fake-model"})
	}
	active := true
	for _, line := range block {
		verb, rest, _ := strings.Cut(line, " ")
		rest = strings.ReplaceAll(rest, `\n`, "\n")
		switch {
		case verb == "if-prompt":
			active = strings.Contains(a.prompt, rest)
			continue
		case verb == "end-if":
			active = true
			continue
		case !active:
			continue
		}
		if err := a.do(verb, rest); err != nil {
			fmt.Fprintf(os.Stderr, "fakeagent: %s: %v\n", line, err)
			a.w.Flush()
			return 2
		}
	}
	a.finish()
	return a.exit
}

func (a *agentRun) do(verb, rest string) error {
	switch verb {
	case "format":
		a.format = rest
		if rest == "codex" {
			a.write(map[string]any{"type": "thread.started", "thread_id": "thread-" + a.session})
			a.write(map[string]any{"type": "turn.started"})
		}
	case "say":
		a.say(rest)
	case "tool":
		name, arg, _ := strings.Cut(rest, " ")
		a.toolCall(name, arg)
		a.toolResult(arg)
	case "toolresult":
		a.toolResult(rest)
	case "echo-prompt":
		a.toolResult(a.prompt)
	case "exec":
		// What came before is streamed, as an agent's is before a long
		// tool call.
		a.w.Flush()
		cmd := exec.Command("sh", "-c", rest)
		cmd.Env = append(os.Environ(), "FAKEAGENT_PROMPT="+a.prompt)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return err
		}
		a.toolCall("Bash", rest)
		a.toolResult(string(out))
	case "fetch":
		// fetch URL: a GET through $HTTPS_PROXY/$HTTP_PROXY, as the agent
		// CLIs built on Node and Rust make it, loopback included (Go's own
		// client would go straight to a loopback address); the outcome is
		// the tool result.
		u := os.ExpandEnv(rest)
		a.toolCall("WebFetch", u)
		a.toolResult(fetch(u))
	case "dial":
		// dial ADDR: a connection of its own, no proxy: host:port, or
		// @NAME for an abstract unix socket.
		addr := os.ExpandEnv(rest)
		a.toolCall("Dial", addr)
		a.toolResult(dial(addr))
	case "pass":
		file, id, _ := strings.Cut(rest, " ")
		return passStory(file, id)
	case "touch":
		return os.WriteFile(rest, nil, 0o644)
	case "sleep":
		d, err := time.ParseDuration(rest)
		if err != nil {
			return err
		}
		a.w.Flush()
		sleepWhileParentLives(d)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "grandchild":
		cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 300`)
		if err := cmd.Start(); err != nil {
			return err
		}
		return os.WriteFile(a.script+".grandchild", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	case "bigline":
		n, err := strconv.Atoi(rest)
		if err != nil {
			return err
		}
		a.bigLine(n)
	case "stream":
		n, err := strconv.Atoi(rest)
		if err != nil {
			return err
		}
		a.stream(n)
	case "toolstream":
		var n, line int
		if _, err := fmt.Sscanf(rest, "%d %d", &n, &line); err != nil {
			return err
		}
		a.toolStream(n, line)
	case "mix":
		var dialect, fixture string
		var big, line, total int
		if _, err := fmt.Sscanf(rest, "%s %s %d %d %d", &dialect, &fixture, &big, &line, &total); err != nil {
			return err
		}
		return a.mix(dialect, fixture, big, line, total)
	case "usage":
		for i, f := range strings.Fields(rest) {
			if i < 4 {
				a.usage[i], _ = strconv.ParseInt(f, 10, 64)
			}
		}
	case "cost":
		a.cost, _ = strconv.ParseFloat(rest, 64)
	case "error":
		code, text, _ := strings.Cut(rest, " ")
		a.errCode, _ = strconv.Atoi(code)
		a.errText = text
	case "limit":
		secs, err := strconv.Atoi(rest)
		if err != nil {
			return err
		}
		a.emit(map[string]any{"type": "rate_limit_event", "session_id": a.session, "rate_limit_info": map[string]any{
			"status": "rejected", "rateLimitType": "five_hour", "resetsAt": time.Now().Unix() + int64(secs)}})
		a.errCode = 429
		a.errText = "You've hit your limit · resets soon"
	case "quota":
		f := strings.Fields(rest)
		if len(f) != 4 {
			return fmt.Errorf("want STATUS WINDOW PCT SECONDS")
		}
		secs, err := strconv.Atoi(f[3])
		if err != nil {
			return err
		}
		info := map[string]any{"status": f[0], "rateLimitType": f[1], "resetsAt": time.Now().Unix() + int64(secs)}
		if f[2] != "-" {
			pct, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return err
			}
			info["utilization"] = pct / 100
		}
		a.emit(map[string]any{"type": "rate_limit_event", "session_id": a.session, "rate_limit_info": info})
	case "final":
		a.final = &rest
	case "noresult":
		a.noResult = true
	case "exit":
		a.exit, _ = strconv.Atoi(rest)
	default:
		return fmt.Errorf("unknown directive %q", verb)
	}
	return nil
}

func (a *agentRun) emit(v map[string]any) {
	if a.format != "claude" {
		return
	}
	a.write(v)
}

// write writes one JSON line, whatever the dialect.
func (a *agentRun) write(v map[string]any) {
	b, _ := json.Marshal(v)
	a.w.Write(b)
	a.w.WriteByte('\n')
}

// items numbers Codex's items.
func (a *agentRun) item() string {
	a.items++
	return fmt.Sprintf("item_%d", a.items)
}

func (a *agentRun) say(text string) {
	a.last = text
	if a.format == "codex" {
		a.write(map[string]any{"type": "item.completed", "item": map[string]any{"id": a.item(), "type": "agent_message", "text": text}})
		return
	}
	if a.format != "claude" {
		fmt.Fprintln(a.w, text)
		return
	}
	a.emit(map[string]any{"type": "assistant", "session_id": a.session, "message": map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	}})
}

func (a *agentRun) toolCall(name, arg string) {
	a.tools++
	if a.format == "codex" {
		a.write(map[string]any{"type": "item.completed", "item": map[string]any{"id": a.item(), "type": "command_execution",
			"command": arg, "aggregated_output": "", "exit_code": 0, "status": "completed"}})
		return
	}
	if a.format != "claude" {
		fmt.Fprintf(a.w, "$ %s\n", arg)
		return
	}
	a.emit(map[string]any{"type": "assistant", "session_id": a.session, "message": map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", a.tools), "name": name,
			"input": map[string]any{"command": arg}}},
	}})
}

func (a *agentRun) toolResult(text string) {
	if a.format == "codex" {
		return // its command_execution item carries it
	}
	if a.format != "claude" {
		fmt.Fprintln(a.w, text)
		return
	}
	a.emit(map[string]any{"type": "user", "session_id": a.session, "message": map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", a.tools), "content": text}},
	}})
}

// bigLine writes one tool-result line of about n bytes without holding it
// in memory.
func (a *agentRun) bigLine(n int) {
	head := `{"type":"user","session_id":"` + a.session + `","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_big","content":"`
	tail := `"}]}}`
	if a.format != "claude" {
		head, tail = "", ""
	}
	a.w.WriteString(head)
	chunk := strings.Repeat("abcdefghij", 6554)
	for left := n - len(head) - len(tail); left > 0; left -= len(chunk) {
		a.w.WriteString(chunk[:min(left, len(chunk))])
	}
	a.w.WriteString(tail)
	a.w.WriteByte('\n')
}

// stream writes about n bytes of ordinary assistant lines: one line,
// encoded once, written again and again.
func (a *agentRun) stream(n int) {
	text := strings.Repeat("streaming output ", 50)
	a.last = text
	line := []byte(text + "\n")
	if a.format == "claude" {
		b, _ := json.Marshal(map[string]any{"type": "assistant", "session_id": a.session, "message": map[string]any{
			"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10},
		}})
		line = append(b, '\n') //nolint:gocritic // b is ours to extend
	}
	for written := 0; written < n; written += len(line) {
		a.w.Write(line)
	}
}

// toolStream writes about n bytes of Bash tool calls whose results are
// lines of about lineSize bytes, as Claude Code prints them: the output
// twice, in the tool_result and in tool_use_result.stdout. The pair is
// encoded once and written again and again.
func (a *agentRun) toolStream(n, lineSize int) {
	// Structs, not maps: the members come in Claude Code's order.
	type part struct {
		ID        string            `json:"id,omitempty"`
		Input     map[string]string `json:"input,omitempty"`
		Name      string            `json:"name,omitempty"`
		ToolUseID string            `json:"tool_use_id,omitempty"`
		Type      string            `json:"type"`
		Content   string            `json:"content,omitempty"`
		IsError   *bool             `json:"is_error,omitempty"`
	}
	type message struct {
		Role    string `json:"role"`
		Content []part `json:"content"`
	}
	type line struct {
		Type          string  `json:"type"`
		Message       message `json:"message"`
		Parent        *string `json:"parent_tool_use_id"`
		SessionID     string  `json:"session_id"`
		ToolUseResult any     `json:"tool_use_result,omitempty"`
	}
	call := line{Type: "assistant", SessionID: a.session, Message: message{Role: "assistant", Content: []part{{
		ID: "toolu_stream", Name: "Bash", Type: "tool_use", Input: map[string]string{"command": "cat main.go", "description": "Show the file"},
	}}}}
	noError := false
	result := func(out string) []byte {
		b, _ := json.Marshal(line{Type: "user", SessionID: a.session,
			Message: message{Role: "user", Content: []part{{ToolUseID: "toolu_stream", Type: "tool_result", Content: out, IsError: &noError}}},
			ToolUseResult: struct {
				Stdout      string `json:"stdout"`
				Stderr      string `json:"stderr"`
				Interrupted bool   `json:"interrupted"`
				IsImage     bool   `json:"isImage"`
			}{Stdout: out}})
		return b
	}
	// The output appears twice, escaped: shrink it to fit the line.
	text := ToolOutput(lineSize)
	for len(text) > 0 && len(result(text)) > lineSize {
		text = strings.ToValidUTF8(text[:len(text)*lineSize/len(result(text))], "")
	}
	pair, _ := json.Marshal(call)
	pair = append(append(append(pair, '\n'), result(text)...), '\n')
	for written := 0; written < n; written += len(pair) {
		a.w.Write(pair)
	}
}

// mix writes the Dialect stream of agent, built from the sample in
// fixture, as that agent prints it: the sample's own closing lines end
// it, so nothing follows.
func (a *agentRun) mix(agent, fixture string, bigLine, lineSize, total int) error {
	d, ok := DialectOf(agent)
	if !ok {
		return fmt.Errorf("mix: no dialect %q", agent)
	}
	sample, err := os.ReadFile(fixture)
	if err != nil {
		return err
	}
	stream, err := d.MixStream(sample, bigLine, lineSize, total)
	if err != nil {
		return err
	}
	_, err = a.w.Write(stream)
	a.format, a.final = "raw", nil
	return err
}

func (a *agentRun) finish() {
	final := a.last
	if a.final != nil {
		final = *a.final
	}
	if a.format == "codex" {
		a.finishCodex(final)
		return
	}
	if a.format != "claude" {
		if a.final != nil {
			fmt.Fprintln(a.w, final)
		}
		return
	}
	if a.noResult {
		return
	}
	if a.errCode != 0 {
		final = a.errText
	}
	res := map[string]any{
		"type": "result", "subtype": "success", "is_error": a.errCode != 0, "num_turns": a.tools + 1,
		"result": final, "session_id": a.session, "total_cost_usd": a.cost,
		"usage": map[string]any{"input_tokens": a.usage[0], "output_tokens": a.usage[1],
			"cache_read_input_tokens": a.usage[2], "cache_creation_input_tokens": a.usage[3]},
		"modelUsage": map[string]any{"fake-model": map[string]any{"contextWindow": 200000}},
	}
	if a.errCode != 0 {
		res["api_error_status"] = a.errCode
	} else {
		res["api_error_status"] = nil
	}
	a.emit(res)
}

// sleepWhileParentLives sleeps d, but exits as soon as the parent (ralph)
// is gone, so a test that kills ralph with SIGKILL leaves no orphan.
func sleepWhileParentLives(d time.Duration) {
	parent := os.Getppid()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if os.Getppid() != parent {
			os.Exit(137)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// passStory sets passes: true for one story of a prd.json, as an agent in
// agent-ownership mode would (re-encoding: a fake need not be careful).
func passStory(file, id string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	stories, _ := doc["userStories"].([]any)
	found := false
	for _, s := range stories {
		if m, ok := s.(map[string]any); ok && m["id"] == id {
			m["passes"] = true
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no story %s in %s", id, file)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(out, '\n'), 0o644)
}

// finishCodex ends a Codex turn: its usage (input includes the cache, as
// Codex counts it), or its failure.
func (a *agentRun) finishCodex(final string) {
	if a.final != nil && final != a.last {
		a.say(final)
	}
	if a.errCode != 0 {
		msg := fmt.Sprintf("unexpected status %d: %s", a.errCode, a.errText)
		a.write(map[string]any{"type": "error", "message": msg})
		a.write(map[string]any{"type": "turn.failed", "error": map[string]any{"message": msg}})
		return
	}
	a.write(map[string]any{"type": "turn.completed", "usage": map[string]any{
		"input_tokens": a.usage[0] + a.usage[2] + a.usage[3], "cached_input_tokens": a.usage[2],
		"cache_write_input_tokens": a.usage[3], "output_tokens": a.usage[1], "reasoning_output_tokens": 0}})
}

// fetch GETs url through the proxy the environment names and says what
// came of it: "fetch URL: 200 BODY" or "fetch URL: refused 403 BODY".
func fetch(url string) string {
	proxy := cmp.Or(os.Getenv("HTTPS_PROXY"), os.Getenv("HTTP_PROXY"))
	client := &http.Client{Timeout: 20 * time.Second}
	if proxy != "" {
		u, err := neturl.Parse(proxy)
		if err != nil {
			return "fetch " + url + ": bad proxy " + err.Error()
		}
		client.Transport = &http.Transport{Proxy: http.ProxyURL(u)}
	}
	resp, err := client.Get(url)
	if err != nil {
		return "fetch " + url + ": error " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return fmt.Sprintf("fetch %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
}

// dial connects to addr without a proxy: "dial ADDR: connected" or
// "dial ADDR: error ...".
func dial(addr string) string {
	network := "tcp"
	if strings.HasPrefix(addr, "@") {
		network = "unix"
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return "dial " + addr + ": error " + err.Error()
	}
	c.Close()
	return "dial " + addr + ": connected"
}

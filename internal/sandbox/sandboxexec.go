package sandbox

import (
	"net"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// profile is the sandbox-exec (Seatbelt) profile of a child laid out as
// r: everything allowed but writes, which only the writable binds get
// (and the terminal, the null device and the temporary directories, since
// macOS has no private /tmp to give), the read-only binds inside them
// denied again, the hidden paths neither readable nor writable, signals
// only within the sandbox, and the network as the policy says: all of it
// (open), none (off), or only ralph's proxy on the host's loopback (proxy,
// at egress's TCP address; the child shares the host's loopback, so
// nothing else of it is allowed). Seatbelt
// applies the last rule that matches, so the rules go from broad to
// narrow, as the binds are sorted.
func profile(r layout, network string, egress *Egress) string {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n(deny file-write*)\n")
	b.WriteString("(allow file-write*\n" +
		"  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/dtracehelper\")\n" +
		"  (regex #\"^/dev/tty\") (regex #\"^/dev/fd/\")\n" +
		"  (subpath \"/private/tmp\") (subpath \"/private/var/folders\"))\n")
	for _, m := range r.binds {
		verb := "deny"
		if m.writable {
			verb = "allow"
		}
		b.WriteString("(" + verb + " file-write* (subpath " + sbplString(m.path) + "))\n")
	}
	for _, h := range r.hidden {
		filter := "literal"
		if h.dir {
			filter = "subpath"
		}
		b.WriteString("(deny file-read* file-write* (" + filter + " " + sbplString(h.path) + "))\n")
	}
	b.WriteString("(deny signal)\n(allow signal (target same-sandbox))\n")
	switch {
	case network == NetworkOpen:
	case network == NetworkProxy && egress != nil && egress.Addr != "":
		_, port, _ := net.SplitHostPort(egress.Addr)
		b.WriteString("(deny network*)\n(allow network-outbound (remote ip " + sbplString("localhost:"+port) + "))\n")
	default:
		b.WriteString("(deny network*)\n")
	}
	return b.String()
}

// sbplString quotes s as a profile string.
func sbplString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// wrapSandboxExec starts l under sandbox-exec with its profile.
// sandbox-exec applies the profile and executes the command in its own
// place, so it is no supervisor. The command runs in a session of its
// own, away from ralph's terminal.
func (b *Box) wrapSandboxExec(l proc.Launch, r layout) proc.Launch {
	argv := append([]string{b.exe, "-p", profile(r, b.policy.Network, b.egress()), r.path}, l.Argv[1:]...)
	return proc.Launch{Path: b.exe, Argv: argv, Dir: l.Dir, Env: r.env, Detach: true}
}

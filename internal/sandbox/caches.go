package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// cacheProbeTimeout bounds a toolchain asked where its cache is.
const cacheProbeTimeout = 10 * time.Second

// FindCaches are the toolchains' cache directories that replay results or
// hold what builds fetched, as the user's environment (env) and their
// user-level configuration place them, and extra (sandbox.caches): Go's
// build and module caches, Cargo's home, npm's, pip's, Maven's and
// Gradle's, ccache's and sccache's. Only the user's choose them: a
// project's go.mod toolchain line, .npmrc or .cargo/config.toml is the
// agent's to write. The one program asked (`go env`) is found on a PATH
// without the project's directories, runs in /, with GOTOOLCHAIN=local
// (no toolchain download or switch), and can only add Go's own two.
//
// Go's build cache is made when it is missing (Go would make it on first
// use, which a read-only home refuses): a gate gets a layer over it.
func FindCaches(ctx context.Context, env []string, project string, extra []string) []string {
	home := getenv(env, "HOME")
	under := func(base, rel string) string {
		if !filepath.IsAbs(base) {
			return ""
		}
		return filepath.Join(base, rel)
	}
	xdg := getenv(env, "XDG_CACHE_HOME")
	if !filepath.IsAbs(xdg) {
		xdg = under(home, ".cache")
	}
	var out []string
	goCache, goModCache := goCaches(ctx, env, project)
	if goCache != "" {
		_ = os.MkdirAll(goCache, 0o755)
	}
	out = append(out, goCache, goModCache,
		cmpAbs(getenv(env, "CARGO_HOME"), under(home, ".cargo")),
		cmpAbs(getenv(env, "npm_config_cache"), getenv(env, "NPM_CONFIG_CACHE"), npmrcCache(under(home, ".npmrc")), under(home, ".npm")),
		cmpAbs(getenv(env, "PIP_CACHE_DIR"), under(xdg, "pip")),
		under(home, ".m2"),
		cmpAbs(getenv(env, "GRADLE_USER_HOME"), under(home, ".gradle")),
		cmpAbs(getenv(env, "CCACHE_DIR"), under(xdg, "ccache")), under(home, ".ccache"),
		cmpAbs(getenv(env, "SCCACHE_DIR"), under(xdg, "sccache")),
	)
	out = append(out, extra...)
	return slices.DeleteFunc(out, func(p string) bool { return p == "" })
}

// goCaches asks the user's go where its build and module caches are; ""
// for each when there is no go (outside the project) or it fails.
func goCaches(ctx context.Context, env []string, project string) (build, mod string) {
	clean := cleanEnv(env, project)
	exe, err := proc.LookPath("go", "", clean)
	if err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(ctx, cacheProbeTimeout)
	defer cancel()
	var out bytes.Buffer
	res, err := proc.Run(ctx, proc.Cmd{Path: exe, Argv: []string{"go", "env", "GOCACHE", "GOMODCACHE"}, Dir: "/",
		Env: clean, Stdout: &out})
	if err != nil || res.ExitCode != 0 {
		return "", ""
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		return "", ""
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return "" // "off", or nothing
	}
	return abs(lines[0]), abs(lines[1])
}

// cleanEnv is env with a PATH of absolute directories outside the
// project, GOTOOLCHAIN=local, and none of the variables that point go at
// a module or workspace.
func cleanEnv(env []string, project string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "PATH" || k == "GOTOOLCHAIN" || k == "GOWORK" || k == "GOFLAGS"
	})
	proj := realPath(project)
	var dirs []string
	for _, d := range filepath.SplitList(getenv(env, "PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		if r := realPath(d); r == "" || (proj != "" && within(r, proj)) || within(d, project) {
			continue
		}
		dirs = append(dirs, d)
	}
	return append(out, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)), "GOTOOLCHAIN=local")
}

// npmrcCache is the cache= line of the user's .npmrc, if it names an
// absolute directory or one under ~.
func npmrcCache(npmrc string) string {
	f, err := os.Open(npmrc)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.TrimSpace(k) != "cache" {
			continue
		}
		v = strings.TrimSpace(v)
		if rest, ok := strings.CutPrefix(v, "~/"); ok {
			v = filepath.Join(filepath.Dir(npmrc), rest)
		}
		if filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
	}
	return ""
}

// cmpAbs is the first of paths that is absolute, or "".
func cmpAbs(paths ...string) string {
	for _, p := range paths {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
	}
	return ""
}

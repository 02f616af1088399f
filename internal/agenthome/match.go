package agenthome

import (
	"path"
	"strings"
)

// Match reports whether name, a slash-separated path, matches pattern:
// element by element as path.Match matches them, where an element "**"
// matches any number of elements, none included. The empty pattern
// matches the empty name only.
func Match(pattern, name string) bool {
	return matchElems(split(pattern), split(name))
}

func matchElems(pattern, name []string) bool {
	for len(pattern) > 0 {
		if pattern[0] == "**" {
			for i := range len(name) + 1 {
				if matchElems(pattern[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pattern[0], name[0]); !ok {
			return false
		}
		pattern, name = pattern[1:], name[1:]
	}
	return len(name) == 0
}

// matchPrefix reports whether a name that starts with the elements name
// and has more could match pattern (as Match reads it).
func matchPrefix(pattern, name []string) bool {
	for ; len(name) > 0; pattern, name = pattern[1:], name[1:] {
		if len(pattern) == 0 {
			return false
		}
		if pattern[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pattern[0], name[0]); !ok {
			return false
		}
	}
	return len(pattern) > 0
}

func split(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if Match(p, name) {
			return true
		}
	}
	return false
}

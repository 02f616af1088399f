// Package words is how ralph says things to people: a count with its noun
// in the right number, the name the user most likely meant. It holds no
// state and knows nothing of ralph's domain.
package words

import (
	"strconv"
	"strings"
)

// Count is n things in English: "1 iteration", "2 iterations". thing is
// the singular; a plural other than thing+"s" is given as the third
// argument ("1 entry", Count(2, "entry", "entries")).
func Count(n int, thing string, plural ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, thing, plural...)
}

// Noun is thing in the number n asks for, without the number.
func Noun(n int, thing string, plural ...string) string {
	if n == 1 {
		return thing
	}
	if len(plural) > 0 {
		return plural[0]
	}
	return thing + "s"
}

// Suggest returns the valid name the user most likely meant: the same name
// spelled with underscores or capitals, else one within two edits, else one
// that contains it or is contained in it; "" if none.
func Suggest(name string, valid []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "-", " ", "-").Replace(strings.ToLower(s))
	}
	n := norm(name)
	best, bestDist := "", 3
	for _, v := range valid {
		if norm(v) == n {
			return v
		}
		if d := editDistance(n, v); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		return best
	}
	if len(n) >= 4 {
		for _, v := range valid {
			if strings.Contains(v, n) || strings.Contains(n, v) {
				return v
			}
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

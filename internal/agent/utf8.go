package agent

import "unicode/utf8"

// utf8Start skips the continuation bytes (at most three) at the front of
// b, so that a tail cut anywhere starts on a whole character.
func utf8Start(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// utf8Cut moves a head cut at n back over continuation bytes (at most
// three), so that the head ends on a whole character.
func utf8Cut(b []byte, n int) int {
	for i := 0; i < utf8.UTFMax-1 && n > 0 && n < len(b) && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	return n
}

package cli

import (
	"testing"
)

func TestRemoteRepo(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"git@github.com:acme/app.git":                 "acme/app",
		"https://github.com/acme/app":                 "acme/app",
		"https://github.com/acme/app.git":             "acme/app",
		"ssh://git@ghe.example.com:2222/acme/app.git": "acme/app",
		"https://ghe.example.com/acme/app/":           "acme/app",
		"/srv/git/app.git":                            "",
		"../app":                                      "",
	} {
		got := ""
		if m := remoteRepo.FindStringSubmatch(url); m != nil {
			got = m[1] + "/" + m[2]
		}
		if got != want {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}
}

package github

import "testing"

func TestGraphQLURL(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"":                                "https://api.github.com/graphql",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com/api/graphql",
	} {
		c, err := New(Options{Repo: "acme/app", BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.graphqlURL(); got != want {
			t.Errorf("base %q: %q, want %q", base, got, want)
		}
	}
}

package ui

import (
	"charm.land/lipgloss/v2"
)

// palette paints text. Without color (NO_COLOR, not a terminal, golden
// tests) every paint is the identity, so views are plain text.
type palette struct {
	bold, dim, red, green, yellow, cyan, title func(string) string
}

func newPalette(color bool) palette {
	if !color {
		id := func(s string) string { return s }
		return palette{id, id, id, id, id, id, id}
	}
	style := func(s lipgloss.Style) func(string) string {
		return func(v string) string {
			if v == "" {
				return v
			}
			return s.Render(v)
		}
	}
	base := lipgloss.NewStyle()
	return palette{
		bold:   style(base.Bold(true)),
		dim:    style(base.Faint(true)),
		red:    style(base.Foreground(lipgloss.Red)),
		green:  style(base.Foreground(lipgloss.Green)),
		yellow: style(base.Foreground(lipgloss.Yellow)),
		cyan:   style(base.Foreground(lipgloss.Cyan)),
		title:  style(base.Bold(true).Reverse(true)),
	}
}

package ui

import (
	"fmt"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// pager shows an iteration's full transcript, scrollable, over the main
// view.
type pager struct {
	title     string
	iteration int
	vp        viewport.Model
	lines     int
}

func newPager(title string, iteration int, lines []string, width, height int) *pager {
	p := &pager{title: title, iteration: iteration}
	p.vp = viewport.New()
	p.vp.SoftWrap = true
	p.vp.FillHeight = true
	p.vp.MouseWheelEnabled = false
	p.resize(width, height)
	p.setLines(lines)
	return p
}

// pagerChrome is the title line and the footer line.
const pagerChrome = 2

func (p *pager) resize(width, height int) {
	p.vp.SetWidth(max(1, width))
	p.vp.SetHeight(max(1, height-pagerChrome))
}

// setLines replaces the content; a reader at the bottom stays there, so a
// running iteration's transcript can be followed.
func (p *pager) setLines(lines []string) {
	follow := p.lines == 0 || p.vp.AtBottom()
	if len(lines) > maxPager {
		lines = append([]string{fmt.Sprintf("… %d earlier lines not shown", len(lines)-maxPager)}, lines[len(lines)-maxPager:]...)
	}
	p.vp.SetContentLines(lines)
	p.lines = len(lines)
	if follow {
		p.vp.GotoBottom()
	}
}

func (p *pager) atBottom() bool { return p.vp.AtBottom() }

func (p *pager) key(k tea.KeyPressMsg) {
	switch k.String() {
	case "g", "home":
		p.vp.GotoTop()
	case "G", "end":
		p.vp.GotoBottom()
	default:
		p.vp, _ = p.vp.Update(k)
	}
}

func (p *pager) view(pal palette, width int) []string {
	title := fitLine(fmt.Sprintf(" %s · %d lines · %3.0f%%", p.title, p.lines, p.vp.ScrollPercent()*100), width)
	out := []string{pal.title(padRight(title, width))}
	out = append(out, splitLines(p.vp.View())...)
	return append(out, fitLine(pal.dim(" esc/q/l back · ↑↓ j/k scroll · pgup/pgdn page · g/G top/bottom · ctrl+c stop"), width))
}

// Package price gives every token a price: a dated table of what the
// models the supported agents use cost per million tokens (input, output,
// cache read, cache write), embedded in the binary and overridable or
// extended by the user's own entries (ralph.toml [prices."MODEL"]).
//
// ralph uses it only when an agent reports tokens but no cost (Codex,
// Gemini, Qwen, droid, Copilot): an estimate is better than a silent $0
// that lets --budget never stop a run.
package price

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

//go:embed prices.toml
var builtin []byte

// Price is what one model costs, in USD per million tokens.
type Price struct {
	Input      float64 `toml:"input"`
	Output     float64 `toml:"output"`
	CacheRead  float64 `toml:"cache-read"`
	CacheWrite float64 `toml:"cache-write"`
}

// Cost is the price of the given token counts, in USD. Input excludes the
// cache reads and writes, which are counted apart (as agent.Usage does).
func (p Price) Cost(input, output, cacheRead, cacheWrite int64) float64 {
	return (float64(input)*p.Input + float64(output)*p.Output +
		float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite) / 1e6
}

// Override changes some of a model's prices: nil fields keep the table's
// value (0 for a model the table does not have).
type Override struct {
	Input, Output, CacheRead, CacheWrite *float64
}

// Table is a dated set of prices, with the model each agent uses when it
// is given none.
type Table struct {
	// Date is when the built-in prices were taken from the vendors' pages.
	Date     string
	models   map[string]Price
	defaults map[string]string
}

type tableFile struct {
	Date     string            `toml:"date"`
	Defaults map[string]string `toml:"defaults"`
	Models   map[string]Price  `toml:"models"`
}

// Builtin returns the embedded table.
func Builtin() *Table {
	var f tableFile
	if err := toml.NewDecoder(bytes.NewReader(builtin)).DisallowUnknownFields().Decode(&f); err != nil {
		// The file is part of the binary and tested: this cannot happen
		// in a build whose tests passed.
		panic(fmt.Sprintf("price: the embedded table does not read: %v", err))
	}
	t := &Table{Date: f.Date, models: map[string]Price{}, defaults: f.Defaults}
	for name, p := range f.Models {
		t.models[Normalize(name)] = p
	}
	return t
}

// With returns a copy of t with the user's prices applied, by model name.
func (t *Table) With(overrides map[string]Override) *Table {
	c := &Table{Date: t.Date, models: make(map[string]Price, len(t.models)+len(overrides)), defaults: t.defaults}
	maps.Copy(c.models, t.models)
	for name, o := range overrides {
		key := Normalize(name)
		p := c.models[key]
		set := func(dst *float64, v *float64) {
			if v != nil {
				*dst = *v
			}
		}
		set(&p.Input, o.Input)
		set(&p.Output, o.Output)
		set(&p.CacheRead, o.CacheRead)
		set(&p.CacheWrite, o.CacheWrite)
		c.models[key] = p
	}
	return c
}

// Estimate is the cost of the tokens on model, in USD; ok is false when
// the table has no price for it.
func (t *Table) Estimate(model string, input, output, cacheRead, cacheWrite int64) (float64, bool) {
	p, _, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(input, output, cacheRead, cacheWrite), true
}

// DefaultModel is the model agent uses when ralph passes none, where the
// vendor documents one; "" otherwise.
func (t *Table) DefaultModel(agent string) string { return t.defaults[agent] }

// Lookup finds model's price: by its name as given, then without a
// provider prefix, a context-size suffix ("[1m]") or a date suffix, then
// by the longest entry that is a prefix of it up to a dash
// ("gpt-5.1-codex-max" is priced as "gpt-5.1-codex"). found is the entry
// used.
func (t *Table) Lookup(model string) (p Price, found string, ok bool) {
	key := Normalize(model)
	if key == "" {
		return Price{}, "", false
	}
	if p, ok := t.models[key]; ok {
		return p, key, true
	}
	best := ""
	for name := range t.models {
		if len(name) > len(best) && strings.HasPrefix(key, name+"-") {
			best = name
		}
	}
	if best == "" {
		return Price{}, "", false
	}
	return t.models[best], best, true
}

var dateSuffix = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Normalize is the form of a model name prices are kept under: lower
// case, without a provider prefix ("openai/", "anthropic:"), a bracketed
// suffix ("claude-opus-4-8[1m]") or a date ("-20250929"), and with the
// dots of Claude version numbers as dashes ("claude-sonnet-4.5").
func Normalize(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.IndexByte(m, '['); i >= 0 {
		m = m[:i]
	}
	if i := strings.LastIndexAny(m, "/:"); i >= 0 {
		m = m[i+1:]
	}
	m = dateSuffix.ReplaceAllString(m, "")
	if strings.HasPrefix(m, "claude-") {
		m = strings.ReplaceAll(m, ".", "-")
	}
	return m
}

package proc_test

import (
	"testing"

	"github.com/ralph-loop/ralph/internal/proc"
)

// BenchmarkRun is the cost of one short child, outside a family and in
// one (its mark, and the sweep when it ends).
func BenchmarkRun(b *testing.B) {
	for _, inFamily := range []bool{false, true} {
		name := "bare"
		ctx := b.Context()
		if inFamily {
			name = "family"
			f, err := proc.NewFamily("bench", proc.FamilyOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ctx = proc.WithFamily(ctx, f)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := proc.Run(ctx, proc.Cmd{Argv: []string{"true"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package task

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShortFormatNames: the names --format completes to name every format
// once, in the order of Formats.
func TestShortFormatNames(t *testing.T) {
	t.Parallel()
	var got []string
	for _, short := range ShortFormatNames() {
		name, err := FormatName(short)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	if diff := cmp.Diff(Formats(), got); diff != "" {
		t.Errorf("ShortFormatNames resolve to (-Formats +got):\n%s", diff)
	}
}

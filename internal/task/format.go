package task

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// format reads and writes one kind of plan file. Each format lives in its own
// file (prd.go, ...) and is chosen by detect. Implementations are stateless:
// they work on the bytes they are given, so File can re-read, merge and
// retry without caring which format it holds.
type format interface {
	// name is the format's name as `ralph tasks list --json` prints it.
	name() string
	// parse reads and validates a plan. path is only used in errors, which
	// are *Error values (joined when there are several).
	parse(path string, data []byte) (*Plan, error)
	// setStatus returns data with task id set to st, changing only the bytes
	// it must, or data itself when the file already says so or the format
	// cannot record st. It returns an error wrapping ErrUnknownTask when no
	// task has that id, and the validation errors of parse when data is
	// invalid.
	setStatus(path string, data []byte, id string, st Status) ([]byte, error)
}

// supported lists the formats detect accepts, for error messages.
const supported = `prd.json (a JSON object with a "userStories" array)`

// detect picks the format of a plan from its content, then its name. A JSON
// object is prd.json even when it lacks "userStories", so that the user gets
// prd.json's error saying what to add rather than "unknown format".
func detect(path string, data []byte) (format, error) {
	body := bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	isJSON := strings.EqualFold(filepath.Ext(path), ".json")
	switch {
	case len(body) > 0 && body[0] == '[':
		return nil, unsupported(path, "a JSON array, the tasks.json format")
	case len(body) > 0 && body[0] == '{', isJSON:
		return prdFormat{}, nil
	case strings.EqualFold(filepath.Ext(path), ".md"), bytes.HasPrefix(body, []byte("#")), bytes.HasPrefix(body, []byte("- [")):
		return nil, unsupported(path, "a markdown plan")
	}
	return nil, unsupported(path, "not a format ralph knows")
}

func unsupported(path, what string) error {
	return fmt.Errorf("%s: %w (%s); supported: %s", path, ErrUnsupported, what, supported)
}

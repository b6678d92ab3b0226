package messages

import "testing"

func TestFileURI(t *testing.T) {
	for path, uri := range map[string]string{
		`/home/u/€ x`: "file:///home/u/%E2%82%AC%20x",
		`C:\Users\u`:  "file:///C:/Users/u",
		`/`:           "file:///",
		`/tmp/c#d?`:   "file:///tmp/c%23d%3F",
	} {
		if got := FileURI(path); got != uri {
			t.Errorf("FileURI(%q) = %q, want %q", path, got, uri)
		}
	}
}

package follow

import "testing"

func TestUnseen(t *testing.T) {
	for _, tc := range []struct {
		name, tail, text, rest string
		found                  bool
	}{
		{"nothing shown yet", "", "$ ls\r\n", "$ ls\r\n", true},
		{"goes on after what was shown", "$ echo a\r\na\r\n", "motd\r\n$ echo a\r\na\r\n$ ", "$ ", true},
		{"the latest place when the tail repeats", "$ ", "$ x\r\n$ ", "", true},
		{"cleared or trimmed past it", "gone", "$ new", "$ new", false},
	} {
		rest, found := unseen([]byte(tc.tail), tc.text)
		if rest != tc.rest || found != tc.found {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, rest, found, tc.rest, tc.found)
		}
	}
}

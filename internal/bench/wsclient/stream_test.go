package wsclient

import "testing"

func TestJSONStringLen(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{`abc"`, 3, true},
		{`a\r\nb"`, 4, true},
		{`\"\\"`, 2, true},
		{`\u001b[0m"`, 4, true},
		{`é\u00e9"`, 4, true},
		{`\ud83d\ude00"`, 4, true},
		{`\u2028"`, 3, true},
		{`abc`, 0, false},
	} {
		n, ok := jsonStringLen([]byte(c.in))
		if n != c.want || ok != c.ok {
			t.Errorf("jsonStringLen(%q) = %d, %v; want %d, %v", c.in, n, ok, c.want, c.ok)
		}
	}
}

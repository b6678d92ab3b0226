package agenttools

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// Filter is a compiled RE2 line filter; an empty pattern matches every line. RE2
// (Go's regexp) runs in time linear in the line, so a pattern an agent writes cannot
// stall the monitor that applies it to every line a command prints.
//
// A nil *Filter matches every line too, so a monitor without a filter needs no special
// case. A Filter is safe for concurrent use.
type Filter struct {
	re *regexp.Regexp // nil: every line matches
}

// NewFilter compiles pattern. The error names the pattern and says why it is not a
// valid RE2 expression, in words an agent can act on (RE2 has no lookaround or
// backreferences, the usual reason a Perl or JavaScript pattern fails).
func NewFilter(pattern string) (*Filter, error) {
	if pattern == "" {
		return &Filter{}, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		hint := ""
		var se *syntax.Error
		if errors.As(err, &se) && (se.Code == syntax.ErrInvalidPerlOp || se.Code == syntax.ErrInvalidEscape) {
			hint = " (RE2 has no lookaround or backreferences)"
		}
		return nil, fmt.Errorf("filter %q is not a valid RE2 regular expression: %w%s", pattern, err, hint)
	}
	return &Filter{re: re}, nil
}

// Match reports whether line passes the filter: whether the pattern matches anywhere
// in it (anchor with ^ and $ to match a whole line).
func (f *Filter) Match(line string) bool {
	return f == nil || f.re == nil || f.re.MatchString(line)
}

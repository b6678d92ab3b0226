// Package strictjson holds encoding/json to JSON-RPC's exact member names: encoding/json
// matches a member to a field ignoring case, so {"Channel": …} would fill channel and
// {"METHOD": …} would name a method. A Members, made once per decoded type, is checked
// before such a decode and refuses a member whose name differs from a known one only
// in case. Members no field knows are left alone: they are ignored, as the protocol
// asks of fields it does not define.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Members are the JSON member names of a struct type and of the structs nested in it.
// It is built once and only read after.
type Members struct {
	exact  map[string]*Members // member name -> what its value holds (nil: nothing to check)
	folded map[string]string   // lower-cased name -> the exact one
	items  *Members            // for a slice: what each item holds
}

// Of describes the members of v's type (a struct, or a pointer to one).
func Of(v any) *Members {
	return membersOf(reflect.TypeOf(v), map[reflect.Type]bool{})
}

func membersOf(t reflect.Type, seen map[reflect.Type]bool) *Members {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if items := membersOf(t.Elem(), seen); items != nil {
			return &Members{items: items}
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	if seen[t] {
		return nil // a type that holds itself is checked to the first repeat only
	}
	seen[t] = true
	defer delete(seen, t)
	m := &Members{exact: map[string]*Members{}, folded: map[string]string{}}
	m.addFields(t, seen)
	return m
}

func (m *Members) addFields(t reflect.Type, seen map[reflect.Type]bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				m.addFields(et, seen)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		m.exact[name] = membersOf(sf.Type, seen)
		m.folded[strings.ToLower(name)] = name
	}
}

// Check reports a member of the JSON value raw, or of the objects nested in it as far
// as m describes them, whose name matches a known one only when case is ignored.
// Whatever is not the shape m describes is left for the decode to report.
func (m *Members) Check(raw []byte) error { return m.check(raw, "") }

func (m *Members) check(raw []byte, path string) error {
	if m == nil {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if m.items != nil {
		if raw[0] != '[' {
			return nil
		}
		i := 0
		return eachValue(raw, func(item []byte) error {
			err := m.items.check(item, fmt.Sprintf("%s[%d]", path, i))
			i++
			return err
		})
	}
	if raw[0] != '{' {
		return nil
	}
	i := skipSpace(raw, 1)
	for i < len(raw) && raw[i] == '"' {
		keyEnd := skipValue(raw, i)
		key := raw[i:keyEnd]
		i = skipSpace(raw, keyEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil // not JSON: the decode says so
		}
		i = skipSpace(raw, i+1)
		valueEnd := skipValue(raw, i)
		value := raw[i:valueEnd]
		inner, exact := m.exact[string(key[1:max(len(key)-1, 1)])]
		if !exact && bytes.IndexByte(key, '\\') >= 0 {
			inner, exact = m.exact[unquote(key)]
		}
		if !exact {
			name := unquote(key)
			if want, folded := m.folded[strings.ToLower(name)]; folded {
				return fmt.Errorf("%q is not a member here: member names are case-sensitive (did you mean %q?)", joinPath(path, name), joinPath(path, want))
			}
		} else if inner != nil {
			if err := inner.check(value, joinPath(path, unquote(key))); err != nil {
				return err
			}
		}
		i = skipSpace(raw, valueEnd)
		if i >= len(raw) || raw[i] != ',' {
			return nil // the end, or not JSON
		}
		i = skipSpace(raw, i+1)
	}
	return nil
}

// The scanners below find where each member or item starts and ends; they expect
// valid JSON (every caller's has been checked already) and on anything else stop
// without a finding, leaving the decode to report it. Every keystroke's frame is
// checked, so a member with nothing nested to check allocates nothing.

// eachValue calls f with each item of the array arr, in order.
func eachValue(arr []byte, f func(item []byte) error) error {
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		if err := f(arr[i:end]); err != nil {
			return err
		}
		i = skipSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return nil // the end, or not JSON
		}
		i = skipSpace(arr, i+1)
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns where the value starting at b[i] ends.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipValue(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j
	}
}

// unquote is a member name's text: the bytes between the quotes, or, where the name
// holds an escape, what it decodes to.
func unquote(quoted []byte) string {
	if len(quoted) < 2 {
		return ""
	}
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(quoted, &s)
	return s
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

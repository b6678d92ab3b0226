package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// JSON-RPC 2.0 and AHP name members exactly; encoding/json matches them ignoring
// case, so {"Channel": …} would fill channel and {"METHOD": …} would name a method.
// A Members, made once per decoded type, is checked before such a decode and refuses
// a member whose name differs from a known one only in case. Members no field knows
// are left alone: they are ignored, as the protocol asks of fields it does not define.

// Members are the JSON member names of a struct type and of the structs nested in it.
// It is built once and only read after.
type Members struct {
	exact  map[string]*Members // member name -> what its value holds (nil: nothing to check)
	folded map[string]string   // lower-cased name -> the exact one
	items  *Members            // for a slice: what each item holds
}

// MembersOf describes the members of v's type (a struct, or a pointer to one).
func MembersOf(v any) *Members {
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
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := m.items.check(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	var members map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &members) != nil {
		return nil
	}
	for name, value := range members {
		inner, exact := m.exact[name]
		if !exact {
			if want, folded := m.folded[strings.ToLower(name)]; folded {
				return fmt.Errorf("%q is not a member here: member names are case-sensitive (did you mean %q?)", joinPath(path, name), joinPath(path, want))
			}
			continue
		}
		if err := inner.check(value, joinPath(path, name)); err != nil {
			return err
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

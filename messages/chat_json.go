package messages

import (
	"encoding/json"
	"math"
)

// The chat and session reducers work on decoded JSON (see ChatState for why). These
// are the small named types they read and write it through.
//
// What they store is always plain: a map[string]any or a []any, never an object or a
// list, so a later type assertion (by a reducer, a test or a client of the package)
// finds what encoding/json would have decoded.

// object is a decoded JSON object.
type object map[string]any

// list is a decoded JSON array.
type list []any

// asObject is v when it is a JSON object, else nil (which reads as empty).
func asObject(v any) object {
	m, _ := v.(map[string]any)
	return m
}

// asList is v when it is a JSON array, else nil.
func asList(v any) list {
	l, _ := v.([]any)
	return l
}

// asString is v when it is a string, else "".
func asString(v any) string {
	s, _ := v.(string)
	return s
}

// sameString reports whether a and b are the same string.
func sameString(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	return ok1 && ok2 && as == bs
}

// asNumber reads a JSON number of any of the forms a decoded value may hold.
func asNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// plain undoes the package's named types, so what is stored is what encoding/json
// decodes.
func plain(v any) any {
	switch x := v.(type) {
	case object:
		return map[string]any(x)
	case list:
		return []any(x)
	case ChatState:
		return map[string]any(x)
	case SessionState:
		return map[string]any(x)
	case Message:
		return map[string]any(x)
	}
	return v
}

// str is the string member k, or "".
func (o object) str(k string) string { return asString(o[k]) }

// obj is the object member k, or nil.
func (o object) obj(k string) object { return asObject(o[k]) }

// list is the array member k, or nil.
func (o object) list(k string) list { return asList(o[k]) }

// put sets member k to v unless v is nil: a JSON null and an absent member are one
// here, as the reference reducer's undefined is.
func (o object) put(k string, v any) {
	if v = plain(v); v != nil && !isNilContainer(v) {
		o[k] = v
	}
}

// set sets member k to v, or removes it when v is nil.
func (o object) set(k string, v any) {
	if v = plain(v); v == nil || isNilContainer(v) {
		delete(o, k)
	} else {
		o[k] = v
	}
}

// isNilContainer reports a nil map or slice held in an interface: an object or list
// that was never there.
func isNilContainer(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return x == nil
	case []any:
		return x == nil
	}
	return false
}

// addMember adds the string v to the array member k (creating it) unless it is there.
func (o object) addMember(k string, v any) {
	if _, ok := v.(string); !ok {
		return
	}
	l := o.list(k)
	for _, e := range l {
		if sameString(e, v) {
			return
		}
	}
	o[k] = []any(append(l, v))
}

// removeMember removes the string v from the array member k; the array stays, even
// empty (for working directories an empty list and an absent one mean different
// things).
func (o object) removeMember(k string, v any) {
	l := o.list(k)
	for i, e := range l {
		if sameString(e, v) {
			o[k] = []any(l.without(i))
			return
		}
	}
}

// indexBy is the index of the first object in l whose member key holds the string
// want, or -1.
func (l list) indexBy(key string, want any) int {
	for i, e := range l {
		if sameString(asObject(e)[key], want) {
			return i
		}
	}
	return -1
}

// without returns a new list without element i, so a list handed out before is left
// as it was.
func (l list) without(i int) list {
	out := make(list, 0, len(l)-1)
	out = append(out, l[:i]...)
	return append(out, l[i+1:]...)
}

// upsertBy replaces the object whose member key matches entry's, or appends entry,
// and returns the list.
func (l list) upsertBy(key string, entry object) list {
	if i := l.indexBy(key, entry[key]); i >= 0 {
		l[i] = map[string]any(entry)
		return l
	}
	return append(l, map[string]any(entry))
}

// cloneJSON deep-copies a generic JSON value. A value of any other Go type (a struct,
// a []string, a map[string]string) is turned into its generic form through
// encoding/json; one that does not encode becomes nil.
func cloneJSON(v any) any {
	switch x := plain(v).(type) {
	case nil, string, bool, float64, json.Number,
		float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = cloneJSON(e)
		}
		return l
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil
		}
		var out any
		if json.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
}

// ownAction is a deep copy of an action in generic JSON form, so nothing a state
// takes from it is shared with the caller.
func ownAction(action map[string]any) object {
	out, _ := cloneJSON(action).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

package strictjson_test

import (
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/strictjson"
)

func BenchmarkMembersCheckAction(b *testing.B) {
	m := strictjson.Of(messages.Action{})
	raw := []byte(`{"type":"terminal/input","data":"l"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Check(raw); err != nil {
			b.Fatal(err)
		}
	}
}

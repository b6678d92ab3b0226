package messages_test

import (
	"os"
	"testing"

	"github.com/termhost/termhost/messages/schematest"
)

// TestMain says once when the reducer fixtures and schemas are not there to test
// against, so their skips are not silent.
func TestMain(m *testing.M) {
	schematest.NoteIfMissing("messages")
	os.Exit(m.Run())
}

package schematest

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	NoteIfMissing("messages/schematest")
	os.Exit(m.Run())
}

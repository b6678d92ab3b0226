package root

import (
	"bytes"
	"encoding/json"

	"github.com/termhost/termhost/messages"
)

// The root list goes out whole with every change (PROTOCOL.md 5.3: root/terminalsChanged
// carries the full list). With hundreds of live shells, encoding that list again for
// every terminal that opens was a fifth of the host's CPU; so each terminal's row is
// encoded once, when it changes (terminalEntry.encoded), and a broadcast only joins
// the rows.

// encodeRow is a terminal's row as it goes into the list; nil when it does not
// encode, which terminalsChangedJSON then encodes again (and fails the same way
// messages.EncodeAction does).
func encodeRow(info messages.TerminalInfo) json.RawMessage {
	b, err := json.Marshal(info)
	if err != nil {
		return nil
	}
	return b
}

// terminalsChangedJSON is root/terminalsChanged carrying infos, encoded as
// messages.EncodeAction encodes it, from rows[i], infos[i] encoded (encodeRow).
func terminalsChangedJSON(infos []messages.TerminalInfo, rows []json.RawMessage) json.RawMessage {
	const head = `{"type":"` + messages.RootTerminalsChanged + `","terminals":[`
	n := len(head) + 2
	for _, r := range rows {
		n += len(r) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(head)
	for i, r := range rows {
		if r == nil {
			r = messages.EncodeAction(&messages.Action{Type: messages.RootTerminalsChanged, Terminals: &[]messages.TerminalInfo{infos[i]}})
			r = r[len(head) : len(r)-2]
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteString("]}")
	return b.Bytes()
}

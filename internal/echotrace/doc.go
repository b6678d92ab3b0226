// Package echotrace places the time of one keystroke's echo along its way: marks
// dropped at each step (the client's send, the proxy's outlet, the owner's gateway,
// the pty write and read, the frames' way back) with monotonic timestamps, read
// back per keystroke by the bench. It costs nothing unless the binary is built with
// the echotrace tag (go build -tags echotrace): Mark is then an empty function.
//
// The bench's nodes and clients share one process, so one clock orders every mark;
// the bench types one keystroke at a time, so each mark between a Begin and the
// matching End belongs to that keystroke (or to background traffic, which the
// medians outvote).
package echotrace

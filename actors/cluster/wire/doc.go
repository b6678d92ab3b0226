// Package wire owns the bytes termhost's nodes send one another: every message that
// passes between nodes (packages cluster and users send and act on them), how each
// one is encoded, and how the receiving node decodes it. A message here is plain
// data: the package holds no state and knows nothing of the cluster's actors or
// membership.
//
// protoactor-go's remote asks a message that is not protobuf to turn itself into one
// (remote.RootSerializable): each message here becomes a protobuf BytesValue, a
// well-known type the remote carries without generated code, holding a kind byte and
// then the message. Most messages are JSON after their kind. The two on the hot path
// are not: a Frame (output of a terminal another node reads, every chunk of it) and
// a Dispatch (every keystroke to another node's terminal) have small binary layouts,
// and a frame's bytes cross as they are, never escaped into JSON. The receiving node
// is handed the BytesValue, and Decode turns it back into the message; on the same
// node a message arrives as it was sent. A message cut short anywhere, or of a kind
// this build does not know, decodes to an error, never to a message with fields
// missing.
//
// Every message is a pointer and is never changed after it is sent, but for one: a
// Frame made by NewFrame, which its Gatherer goes on filling until the frame is taken
// (Frame.Take), by protoactor's endpoint writer serializing it or, on the same node,
// by the receiver reading it.
package wire

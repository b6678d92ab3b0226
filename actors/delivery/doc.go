// Package delivery owns how the host's frames reach a connection: the Journal, which
// gives every envelope of every channel the next serverSeq and keeps a bounded ring
// of them for reconnect to replay, and the Outbox, one per connection, which queues
// frames without ever blocking the channel actor that hands them over.
//
// It promises:
//   - serverSeq is one host-wide counter: every envelope takes the next value, and a
//     replay returns each kept envelope after a given seq once, in order, or says the
//     ring no longer reaches back that far;
//   - Deliver never blocks: a connection that reads slowly has adjacent terminal/data
//     of one channel merged while they wait, and is closed with a reason (never
//     stalls anyone) when it stays too far behind or its queue passes its hard bound;
//   - a subscriber's delivery.maxLatencyMs is honoured: its terminal/data may wait that
//     long to be merged, and no longer.
package delivery

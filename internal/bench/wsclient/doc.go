// Package wsclient owns the clients `termhost bench` drives a host with over AHP on
// WebSocket, and what they count:
//
//   - Control: a control connection (package client's, signed in and initialized
//     without subscriptions) that opens, types into, subscribes to and disposes of
//     terminals, and hands each watched channel's action envelopes to its Watch;
//   - Stream: a subscriber on a bare WebSocket (coder/websocket) that counts a
//     channel's terminal/data bytes without decoding every frame;
//   - Counter: a flood's subscriber that reads straight off its TCP connection,
//     parsing RFC 6455 itself, counts terminal/data bytes and checks their order.
//
// Stream and Counter both end their Drain with an End: the bytes and frames seen,
// whether terminal/exited came, and the host's close frame if it sent one. What a
// subscriber reads costs the machine the host is measured on, so both read as
// little as a client must; nothing here measures time or judges a figure.
package wsclient

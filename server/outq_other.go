//go:build !linux

package server

import "errors"

// unsentBytes cannot be asked here: corkConn.room then says no, and every frame goes
// through the connection's writer, as it would with a full socket.
func unsentBytes(int) (int, error) {
	return 0, errors.New("server: no SIOCOUTQ on this system")
}

package ahp

import (
	"sync"
	"time"

	"github.com/termhost/termhost/messages"
)

// Clients remembers, for each clientId the host has seen, who signed it in and the
// protocol version it negotiated, for a while after its connection went: a client
// whose transport drops opens a new connection and sends `reconnect` as its first
// request (lifecycle: "Reconnection"), with no initialize to negotiate again.
//
// It is shared by every connection of a server, and only the connect path and a
// connection's end touch it, so a mutex serves rather than an actor.
type Clients struct {
	// keep is how long a clientId is remembered after its last connection went;
	// max bounds how many are remembered (the oldest gone go first).
	keep time.Duration
	max  int
	now  func() time.Time

	mu   sync.Mutex // guards byID
	byID map[string]*client
}

type client struct {
	user    string
	version string
	open    int       // connections signed in as this clientId now
	left    time.Time // when the last of them went, while open is 0
}

// Defaults of NewClients: a reconnect within ten minutes resumes; past that, or past
// 10,000 clients gone, the client initializes again.
const (
	DefaultClientKeep = 10 * time.Minute
	DefaultClientMax  = 10_000
)

// NewClients remembers clients for keep after they went, at most max of them.
func NewClients(keep time.Duration, max int) *Clients {
	if keep <= 0 {
		keep = DefaultClientKeep
	}
	if max <= 0 {
		max = DefaultClientMax
	}
	return &Clients{keep: keep, max: max, now: time.Now, byID: map[string]*client{}}
}

// join signs clientID in for user with version, after an initialize (version set) or
// a reconnect (version "" resumes the one remembered). It refuses a clientId another
// person holds or held, so nobody takes over someone else's claims by naming their
// client; a reconnect of a clientId the host does not remember (never seen, gone too
// long, or from before the host restarted) is refused so the client initializes.
//
// back, when not nil, runs once the client has joined, under the table's lock, as
// leave's left does: a connection tells the sessions its client is back, or gone,
// in the order the table changed. Sent after the lock, a resume's "back" could
// overtake the old connection's "gone" and leave the client marked away while it
// is connected. back must not block (an actor's Send does not).
func (r *Clients) join(clientID, user, version string, back func()) (string, *messages.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.byID[clientID]
	if c != nil && c.open == 0 && r.now().Sub(c.left) > r.keep {
		delete(r.byID, clientID)
		c = nil
	}
	switch {
	case c != nil && c.user != user:
		return "", messages.Errorf(messages.CodePermissionDenied, "The client %s belongs to someone else here; use a clientId of your own", clientID)
	case c == nil && version == "":
		return "", messages.Errorf(messages.CodeInvalidRequest, "Unknown client %s: this host does not remember it (gone too long, or the host restarted); call initialize", clientID)
	case c == nil:
		r.makeRoom()
		c = &client{user: user}
		r.byID[clientID] = c
	}
	if version != "" {
		c.version = version
	}
	c.open++
	if back != nil {
		back()
	}
	return c.version, nil
}

// leave says one connection of clientID went, and reports whether it was the last;
// when it was, left (if not nil) runs under the table's lock (see join).
func (r *Clients) leave(clientID string, left func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.byID[clientID]; c != nil && c.open > 0 {
		if c.open--; c.open == 0 {
			c.left = r.now()
			if left != nil {
				left()
			}
			return true
		}
	}
	return false
}

// makeRoom forgets the longest gone client when the table is full. Clients with a
// connection open are never forgotten; their number is bounded by the connections.
func (r *Clients) makeRoom() {
	if len(r.byID) < r.max {
		return
	}
	var oldest string
	var at time.Time
	for id, c := range r.byID {
		if c.open == 0 && (oldest == "" || c.left.Before(at)) {
			oldest, at = id, c.left
		}
	}
	if oldest != "" {
		delete(r.byID, oldest)
	}
}

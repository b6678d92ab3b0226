package pty

import "sync"

// SessionScanner finds the members of sessions for Terminate where the kernel keeps
// no children lists (see sessionOf). Only a pass over every process on the machine
// finds them then, and a host disposing many terminals at once (a burst of short
// commands, a shutdown) would make one pass each: the scanner makes one pass for
// all the sessions asked for while the previous pass ran. The zero value is
// ready; it is safe for concurrent use.
type SessionScanner struct {
	mu      sync.Mutex
	waiting map[int][]chan []member // sessions wanted by the next pass
	running bool
}

// members returns the processes of session sid, from the next pass.
func (s *SessionScanner) members(sid int) []member {
	if s == nil {
		return sessionMembers(sid)
	}
	ch := make(chan []member, 1)
	s.mu.Lock()
	if s.waiting == nil {
		s.waiting = map[int][]chan []member{}
	}
	s.waiting[sid] = append(s.waiting[sid], ch)
	if !s.running {
		s.running = true
		go s.run()
	}
	s.mu.Unlock()
	return <-ch
}

// run makes passes while anyone waits; requests that come during a pass are served
// by the next one, so none gets an answer read before it asked.
func (s *SessionScanner) run() {
	for {
		s.mu.Lock()
		batch := s.waiting
		s.waiting = nil
		if len(batch) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		sids := make(map[int]bool, len(batch))
		for sid := range batch {
			sids[sid] = true
		}
		found := scanSessions(sids)
		for sid, chs := range batch {
			for _, ch := range chs {
				ch <- found[sid]
			}
		}
	}
}

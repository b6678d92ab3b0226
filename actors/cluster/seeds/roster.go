package seeds

// Roster is the account a provider keeps of its seeds: which node answered at each
// and how many polls in a row it has missed since. It is pure, so what a stall or a
// death does to the member list is tested without a network.
type Roster struct {
	cluster string
	self    *Node
	misses  int
	order   []string
	seeds   map[string]*seedState
}

type seedState struct {
	node   *Node // the node that answered last, nil before any answer
	missed int   // polls missed since
}

// Change is what one poll's answer changed about its seed.
type Change int

const (
	// Unchanged: an answer from a member, or one more miss of a seed that is not one.
	Unchanged Change = iota
	// Answers: a node answers a seed that had no member: its first answer, or the
	// first after it was lost.
	Answers
	// Missed: the seed missed a poll and has misses left.
	Missed
	// Lost: the seed has missed its last poll: its node leaves the member list.
	Lost
)

// NewRoster is the account of seeds (in the order Members keeps) for a node of
// cluster, self (nil for a client: no member), whose seeds may miss misses-1 polls in
// a row and stay.
func NewRoster(cluster string, self *Node, seeds []string, misses int) *Roster {
	r := &Roster{cluster: cluster, self: self, misses: max(misses, 1), seeds: map[string]*seedState{}}
	for _, s := range seeds {
		if r.seeds[s] == nil {
			r.order = append(r.order, s)
			r.seeds[s] = &seedState{}
		}
	}
	return r
}

// Observe takes one poll's answer from seed: the node it named, or the error.
func (r *Roster) Observe(seed string, n *Node, err error) Change {
	s := r.seeds[seed]
	if s == nil {
		return Unchanged
	}
	if err != nil || n == nil {
		s.missed++
		switch {
		case s.node != nil && s.missed == r.misses:
			return Lost
		case s.missed < r.misses:
			return Missed
		}
		return Unchanged
	}
	was := r.member(s)
	s.node, s.missed = n, 0
	if !was && r.member(s) {
		return Answers
	}
	return Unchanged
}

// member says whether a seed's node is in the member list.
func (r *Roster) member(s *seedState) bool {
	return s.node != nil && s.missed < r.misses && s.node.ClusterName == r.cluster &&
		(r.self == nil || s.node.ID != r.self.ID)
}

// Members are this node (for a member) and every other node of the cluster a seed
// names that has not missed its last allowed poll, each once, in seed order.
func (r *Roster) Members() []Node {
	var out []Node
	seen := map[string]bool{}
	if r.self != nil {
		out = append(out, *r.self)
		seen[r.self.ID] = true
	}
	for _, seed := range r.order {
		if s := r.seeds[seed]; r.member(s) && !seen[s.node.ID] {
			seen[s.node.ID] = true
			out = append(out, *s.node)
		}
	}
	return out
}

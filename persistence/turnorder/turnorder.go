// Package turnorder owns where a chat's local turns (the host's own, such as `!`
// commands) go among the turns of its transcript or live state (seed 000, "Who opens
// one"). Each local turn goes right after the turn it is anchored to - after the local
// turns that ran before it from the same anchor, and after the local turns anchored
// to those - and one anchored to "" goes before every transcript turn. A local turn
// whose anchor is neither "" nor in the transcript nor a kept local turn is dropped,
// as the reference host drops one, and so is every local turn anchored to a dropped
// one. A local turn whose id the transcript already holds stays where the transcript
// has it. A repeated local id keeps its first turn. It is pure: persistence keeps the
// turns, and calls it to order them.
package turnorder

// Ref is what ordering needs of a local turn: its id and the turn it is anchored to.
type Ref struct {
	ID, AnchorTurnID string
}

// Merge puts local turns back among a transcript's: order is every turn id in order,
// and keep says which of local stayed (see the package comment for where each goes).
func Merge(transcript []string, local []Ref) (order []string, keep []bool) {
	inTranscript := make(map[string]bool, len(transcript))
	for _, id := range transcript {
		inTranscript[id] = true
	}
	keep = make([]bool, len(local))
	children := make(map[string][]int) // anchor id -> indexes into local, in run order
	seen := make(map[string]bool, len(local))
	for i, t := range local {
		if t.ID == "" || seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		if inTranscript[t.ID] {
			keep[i] = true
			continue
		}
		children[t.AnchorTurnID] = append(children[t.AnchorTurnID], i)
	}

	order = make([]string, 0, len(transcript)+len(local))
	var stack []int
	// place emits the local turns anchored to anchor, each followed by its own, depth
	// first; a loop of local turns anchored to each other is never reached. Each
	// anchor's turns are placed once, even if the transcript repeats it.
	place := func(anchor string) {
		kids := children[anchor]
		delete(children, anchor)
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			order = append(order, local[i].ID)
			keep[i] = true
			kids := children[local[i].ID]
			delete(children, local[i].ID)
			for j := len(kids) - 1; j >= 0; j-- {
				stack = append(stack, kids[j])
			}
		}
	}
	place("")
	for _, id := range transcript {
		order = append(order, id)
		place(id)
	}
	return order, keep
}

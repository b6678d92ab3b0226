package root

// ListTerminals asks the root for the URIs of the terminals it holds, in the order
// they were made; the answer is a []string.
type ListTerminals struct{}

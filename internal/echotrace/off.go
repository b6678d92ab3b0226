//go:build !echotrace

package echotrace

// On says whether marks are kept: false without the echotrace tag.
const On = false

// Mark notes that a keystroke passed the named step; nothing without the tag.
func Mark(string) {}

// Begin starts a keystroke's trace; nothing without the tag.
func Begin() {}

// End ends a keystroke's trace and keeps it under label; nothing without the tag.
func End(string) {}

// Report is the kept traces' summary; "" without the tag.
func Report() string { return "" }

package ahp

// ActionGrant is the grant a client-dispatchable action needs ("" for none), as this
// method table checks it: what a cluster node that acts for another checks again.
func ActionGrant(actionType string) string { return actionGrant(actionType) }

// Package hoststart owns starting the host `termhost bench` measures when it is not
// given one to drive: in the bench's own process (StartLocal: a server.Server on a
// free loopback port) or as `termhost serve` in a process of its own (StartProcess,
// which waits for the contract's `listening on` line). Either way the host gets a
// fresh state folder with an owner token, which the caller signs in with, and Close
// stops the host (every terminal ended and reaped) and removes the folder.
//
// EmptyHome points this process's HOME at an empty folder until Close, so the host's
// shells read no rc files of the person running the bench. It is process-wide on
// purpose: the raw baselines then run with the same HOME. Nothing here measures
// anything.
package hoststart

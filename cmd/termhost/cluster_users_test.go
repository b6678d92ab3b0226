package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/internal/client"
)

// The cluster's users: nodes that share no folder still share their users, tokens and
// grants (actors/cluster/users, auth/replica.go).

func TestClusterUsersWithSeeds(t *testing.T) {
	// Not parallel, as TestClusterWithEtcd.
	runClusterUsers(t, seedsFlags(t, 3))
}

// seedsFlags gives each of n nodes (slot 0 to n-1) its seeds provider flags: every
// node's seed address is in every node's list, the late ones' included, as the
// seeds provider polls only the addresses it is given.
func seedsFlags(t *testing.T, n int) func(slot int) []string {
	ports := make([]int, n)
	var seeds []string
	for i := range ports {
		ports[i] = freePort(t)
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", ports[i]))
	}
	return func(slot int) []string {
		return []string{"--seeds", strings.Join(seeds, ","), "--seed-port", strconv.Itoa(ports[slot])}
	}
}

func TestClusterUsersWithEtcd(t *testing.T) {
	// Not parallel, as TestClusterWithEtcd.
	endpoint := startEtcd(t)
	runClusterUsers(t, func(int) []string { return []string{"--etcd", endpoint} })
}

// runClusterUsers: three nodes, each with its own state folder. Users made with
// `termhost token` on one node sign in on the others, their grants hold there, a
// revocation on one node closes the user's connection on another, a role changed by
// hand on one node narrows the user's connection on another, and a node that was down
// while a token was revoked refuses it from the moment it is back.
func runClusterUsers(t *testing.T, provider func(slot int) []string) {
	bin := buildBinary(t)
	const secret = "the cluster's secret"
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	a, b, c := startThreeNodes(t, bin, provider, secret)
	nodes := []*clusterNode{a, b, c}

	// Each node made its own owner on its first start; the owner's token from any of
	// them signs in on every node.
	for _, from := range nodes {
		for _, to := range nodes {
			waitSignIn(t, ctx, to, from.token, true, "node "+from.name+"'s owner token on node "+to.name)
		}
	}

	// Users made on node a sign in on nodes b and c.
	// (The times are logged, not asserted: how long a change takes to count on
	// another node, beside the same change on its own node.)
	ann := tokenAdd(t, bin, a, "ann", "member")
	made := time.Now()
	waitSignIn(t, ctx, a, ann, true, "ann's token on node a, where it was made")
	onA := time.Since(made)
	waitSignIn(t, ctx, b, ann, true, "ann's token, made on node a, on node b")
	t.Logf("a token made on node a signed in on node a after %v, on node b after %v", onA, time.Since(made))
	gus := tokenAdd(t, bin, a, "gus", "guest")
	bea := tokenAdd(t, bin, a, "bea", "member")
	for _, n := range []*clusterNode{b, c} {
		waitSignIn(t, ctx, n, ann, true, "ann's token, made on node a, on node "+n.name)
		waitSignIn(t, ctx, n, gus, true, "gus's token, made on node a, on node "+n.name)
	}

	// Grants hold on node b: the guest may not open a terminal there, nor watch one.
	rootB := b.dial(ctx, "root-b")
	createOn(t, ctx, rootB, "root-b", "ahp-terminal:/users-b", "b")
	createOn(t, ctx, c.dial(ctx, "root-c"), "root-c", "ahp-terminal:/users-c", "c")
	waitList(t, ctx, rootB, "node c's terminal on node b's list", hasRows(map[string]string{"ahp-terminal:/users-b": "b", "ahp-terminal:/users-c": "c"}))
	guest := dialAs(t, ctx, b, gus, "gus-b")
	_, err := guest.Request(ctx, "createTerminal", map[string]any{"channel": "ahp-terminal:/by-gus", "claim": map[string]any{"kind": "client", "clientId": "gus-b"}})
	if err == nil || !strings.Contains(err.Error(), "gus may not terminal:create") {
		t.Fatalf("gus, a guest made on node a, opened a terminal on node b: %v", err)
	}
	if _, err := guest.Subscribe(ctx, "ahp-terminal:/users-b"); err == nil || !strings.Contains(err.Error(), "gus may not terminal:output") {
		t.Fatalf("gus, a guest made on node a, watched a terminal on node b: %v", err)
	}
	// And on the node that acts: ann, a member, opens a terminal on node c from node b
	// and types into it.
	annB := dialAs(t, ctx, b, ann, "ann-b")
	createOn(t, ctx, annB, "ann-b", "ahp-terminal:/by-ann", "c")
	_, s, _ := subscribeStream(t, ctx, annB, "ahp-terminal:/by-ann")
	s.untilPrompt(ctx)
	if err := annB.Dispatch(ctx, "ahp-terminal:/by-ann", 1, map[string]any{"type": "terminal/input", "data": "echo ann-$((6*7))\r"}); err != nil {
		t.Fatal(err)
	}
	s.untilOutput(ctx, "ann-42")

	// A revocation on node b closes ann's connection on node a, and her token signs in
	// nowhere any more; as a revocation on node a closes lou's there.
	// (Logged: when node a first refuses the token. An open connection follows at the
	// host's next look at its users, within a second either way.)
	lou := tokenAdd(t, bin, a, "lou", "member")
	louA := dialAs(t, ctx, a, lou, "lou-a")
	revokeAt := revoke(t, bin, a, "lou")
	waitSignIn(t, ctx, a, lou, false, "lou's token on node a after her revocation on node a")
	local := time.Since(revokeAt)
	waitClosed(t, ctx, louA, delivery.ReasonSignedOut, "lou's connection on node a after her revocation on node a")
	annA := dialAs(t, ctx, a, ann, "ann-a")
	revokeAt = revoke(t, bin, b, "ann")
	waitSignIn(t, ctx, a, ann, false, "ann's token on node a after her revocation on node b")
	t.Logf("node a refused a token %v after its revocation on node a, %v after one on node b", local, time.Since(revokeAt))
	waitClosed(t, ctx, annA, delivery.ReasonSignedOut, "ann's connection on node a after her revocation on node b")
	for _, n := range nodes {
		waitSignIn(t, ctx, n, ann, false, "ann's revoked token on node "+n.name)
	}

	// A role changed by hand in node b's users file: bea, now a guest, is shut out of
	// the terminal she watches through node c.
	beaC := dialAs(t, ctx, c, bea, "bea-c")
	if _, err := beaC.Subscribe(ctx, "ahp-terminal:/users-b"); err != nil {
		t.Fatal(err)
	}
	if err := editRole(filepath.Join(b.state, "users.json"), "bea", "guest"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ctx, beaC, delivery.ReasonRightsChanged, "bea's connection on node c after she was made a guest on node b")

	// Node c misses a revocation and a new user while it is down; from the moment it
	// is back it refuses the one and takes the other.
	eve := tokenAdd(t, bin, a, "eve", "member")
	waitSignIn(t, ctx, c, eve, true, "eve's token on node c")
	c.stop()
	revoke(t, bin, a, "eve")
	dan := tokenAdd(t, bin, b, "dan", "member")
	// Node b has taken the revocation from node a: the cluster knew it before c came
	// back.
	waitSignIn(t, ctx, b, eve, false, "eve's revoked token on node b")
	c.start(secret)
	if err := signIn(ctx, c, eve); !refused(err) {
		t.Fatalf("node c, back after missing eve's revocation, did not refuse her token: %v", err)
	}
	if err := signIn(ctx, c, dan); err != nil {
		t.Fatalf("node c, back after missing dan's making, refused his token: %v", err)
	}
}

// tokenAdd is `termhost token add` against n's state folder; it returns the token.
func tokenAdd(t *testing.T, bin string, n *clusterNode, user, role string) string {
	t.Helper()
	r := runBin(t, bin, "", "token", "add", "--state-dir", n.state, "--user", user, "--role", role)
	if r.code != 0 {
		t.Fatalf("token add %s on node %s: exit %d: %s", user, n.name, r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// revoke is `termhost token revoke` of user against n's state folder; it returns
// when the command ended.
func revoke(t *testing.T, bin string, n *clusterNode, user string) time.Time {
	t.Helper()
	if r := runBin(t, bin, "", "token", "revoke", "--state-dir", n.state, user); r.code != 0 {
		t.Fatalf("token revoke %s on node %s: exit %d: %s", user, n.name, r.code, r.stderr)
	}
	return time.Now()
}

// signIn opens a connection to n as the browser page does, with the token in the
// bearer subprotocol: a token n does not take is refused (401) rather than let in as
// nobody.
func signIn(ctx context.Context, n *clusterNode, token string) error {
	c, err := client.Dial(ctx, "ws://"+n.ws+"/", &websocket.DialOptions{Subprotocols: []string{"termhost", "termhost.bearer." + token}})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Initialize(ctx, "sign-in-"+token[len(token)-8:]) // a client id is one user's

	return err
}

// waitSignIn waits until n takes token (want) or refuses it (!want). A change made on
// another node shows on n only in whether n takes the token, so that is retried under
// the deadline.
func waitSignIn(t *testing.T, ctx context.Context, n *clusterNode, token string, want bool, what string) {
	t.Helper()
	for {
		err := signIn(ctx, n, token)
		// Anything else (a token revoked between the upgrade and initialize, say) is
		// tried again.
		if want && err == nil || !want && refused(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: never %s; last: %v", what, map[bool]string{true: "taken", false: "refused"}[want], err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// refused says err is n's refusal of the token: 401 at the upgrade.
func refused(err error) bool {
	var up *client.UpgradeError
	return errors.As(err, &up) && up.StatusCode == http.StatusUnauthorized
}

// dialAs connects to n as the holder of token, initialized.
func dialAs(t *testing.T, ctx context.Context, n *clusterNode, token, clientID string) *client.Conn {
	t.Helper()
	c, err := client.Dial(ctx, "ws://"+n.ws+"/?tkn="+token, nil)
	if err != nil {
		t.Fatalf("dialing node %s: %v", n.name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, clientID); err != nil {
		t.Fatalf("initialize on node %s: %v", n.name, err)
	}
	return c
}

// waitClosed waits for the host to close c with reason.
func waitClosed(t *testing.T, ctx context.Context, c *client.Conn, reason delivery.CloseReason, what string) {
	t.Helper()
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatalf("%s: the connection stayed open", what)
	}
	var ce websocket.CloseError
	if err := c.Err(); !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != string(reason) {
		t.Fatalf("%s: the connection ended with %v, want 1008 %q", what, c.Err(), reason)
	}
}

// editRole sets user's role in a users file by hand, as an operator with an editor
// would.
func editRole(path, user, role string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var file map[string]any
	if err := json.Unmarshal(b, &file); err != nil {
		return err
	}
	for _, u := range file["users"].([]any) {
		if u := u.(map[string]any); u["name"] == user {
			u["role"] = role
		}
	}
	b, err = json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Package versioning owns which versions of the Agent Host Protocol termhost speaks:
// a client's offer is negotiated against them at initialize, and a connection's gate
// then holds back the actions its version does not know (the protocol's
// versioning.md). It reads frames only through package messages' layout.
package versioning

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/termhost/termhost/messages"
)

// Baselines are the protocol versions termhost speaks, newest first: 1.0.0 and every
// minor line down to 0.5.1 (PROTOCOL.md 2.2). An offered version is accepted when it
// is in the caret range of a baseline.
var baselines = []version{{1, 0, 0}, {0, 9, 0}, {0, 8, 0}, {0, 7, 0}, {0, 6, 0}, {0, 5, 1}}

// SupportedVersions lists the accepted ranges, as -32005's data names them.
func SupportedVersions() []string {
	out := make([]string, len(baselines))
	for i, b := range baselines {
		out[i] = "^" + b.String()
	}
	return out
}

type version struct{ major, minor, patch int }

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

func (v version) less(o version) bool {
	if v.major != o.major {
		return v.major < o.major
	}
	if v.minor != o.minor {
		return v.minor < o.minor
	}
	return v.patch < o.patch
}

func parseVersion(s string) (version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return version{}, fmt.Errorf("%q is not a MAJOR.MINOR.PATCH version", s)
	}
	var n [3]int
	for i, p := range parts {
		// SemVer numbers are ASCII digits only; Atoi alone would take "+1" and "-0".
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return version{}, fmt.Errorf("%q is not a MAJOR.MINOR.PATCH version", s)
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || (len(p) > 1 && p[0] == '0') {
			return version{}, fmt.Errorf("%q is not a MAJOR.MINOR.PATCH version", s)
		}
		n[i] = v
	}
	return version{n[0], n[1], n[2]}, nil
}

// caret reports whether v is in ^b.
func (b version) caret(v version) bool {
	if v.major != b.major || v.less(b) {
		return false
	}
	if b.major == 0 {
		if v.minor != b.minor {
			return false
		}
		if b.minor == 0 && v.patch != b.patch {
			return false
		}
	}
	return true
}

// Negotiate picks the highest offered version termhost accepts. It answers -32602 for
// a malformed offer and -32005 with the supported ranges when nothing matches.
func Negotiate(offered []string) (string, *messages.Error) {
	var best *version
	bestStr := ""
	for _, s := range offered {
		v, err := parseVersion(s)
		if err != nil {
			return "", messages.Errorf(messages.CodeInvalidParams, "Invalid params: protocolVersions: %v", err)
		}
		for _, b := range baselines {
			if b.caret(v) && (best == nil || best.less(v)) {
				vv := v
				best, bestStr = &vv, s
			}
		}
	}
	if best == nil {
		e := messages.Errorf(messages.CodeUnsupportedProtocolVersion,
			"Client offered protocol versions [%s], none of which this host speaks (it accepts %s)",
			strings.Join(offered, ", "), strings.Join(SupportedVersions(), ", "))
		e.Data = map[string]any{"supportedVersions": SupportedVersions()}
		return "", e
	}
	return bestStr, nil
}

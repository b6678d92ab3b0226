package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termhost/termhost/persistence/atomicfile"
	"golang.org/x/sys/unix"
)

const (
	usersFile      = "users.json"
	lockSuffix     = ".lock" // users.json.lock: the writers' advisory lock
	ownerTokenFile = "owner.token"
	tokenPrefix    = "th_"
	tokenBytes     = 32
	tokenIDLen     = 8    // hex digits of the hash shown as a token's id
	maxTokenLen    = 1024 // longer presented tokens are refused without hashing
	maxNameLen     = 64
)

// ErrNotFound is returned by Revoke when nothing has the given name or id.
var ErrNotFound = errors.New("auth: no such user or token")

// errNoChange tells editLocked there is nothing to write.
var errNoChange = errors.New("auth: nothing to change")

// UserInfo describes a user for listing. It never holds a token or a full hash.
type UserInfo struct {
	Name   string
	Role   string
	Tokens []TokenInfo
}

// TokenInfo describes one of a user's tokens: a short id (the first 8 hex digits of
// its hash), usable with Revoke, and when it was made.
type TokenInfo struct {
	ID      string
	Created time.Time
}

// The users file as it is on disk.
type fileData struct {
	// Roles maps a role name to the grants (or groups, or "*") it carries. Roles
	// listed here replace the built-in role of the same name.
	Roles map[string][]string `json:"roles,omitempty"`
	Users []fileUser          `json:"users"`
	// Revoked are the hashes of every token revoked here or, in a cluster, anywhere:
	// such a token never signs in again, whatever another copy of the file lists.
	Revoked []string `json:"revoked,omitempty"`
	// The versions a cluster's nodes compare their copies by (replica.go): of each
	// custom role, and of each user taken out of the file. Absent on a lone host.
	RoleVersions map[string]Version `json:"roleVersions,omitempty"`
	Removed      map[string]Version `json:"removed,omitempty"`
}

type fileUser struct {
	Name   string      `json:"name"`
	Role   string      `json:"role"`
	Tokens []fileToken `json:"tokens"`
	// Version is the version of the user's role (replica.go); absent on a lone host.
	Version *Version `json:"version,omitempty"`
}

type fileToken struct {
	SHA256  string    `json:"sha256"` // hex SHA-256 of the token
	Created time.Time `json:"created,omitzero"`
}

func (d fileData) clone() fileData {
	c := fileData{Users: make([]fileUser, len(d.Users)), Revoked: slices.Clone(d.Revoked),
		RoleVersions: maps.Clone(d.RoleVersions), Removed: maps.Clone(d.Removed)}
	if d.Roles != nil {
		c.Roles = make(map[string][]string, len(d.Roles))
		for k, v := range d.Roles {
			c.Roles[k] = slices.Clone(v)
		}
	}
	for i, u := range d.Users {
		u.Tokens = slices.Clone(u.Tokens)
		if u.Version != nil {
			v := *u.Version
			u.Version = &v
		}
		c.Users[i] = u
	}
	return c
}

// state is a validated users file with what Authenticate needs precomputed.
type state struct {
	file   fileData
	roles  map[string]map[string]bool // effective role -> single grants
	tokens []tokenEntry
}

type tokenEntry struct {
	hash [sha256.Size]byte
	user int // index into file.Users
}

// compile validates d and builds its state. d is not copied; callers hand it over.
func compile(d fileData) (*state, error) {
	st := &state{file: d, roles: map[string]map[string]bool{}}
	for name, grants := range builtinRoles {
		st.roles[name] = grantSet(grants)
	}
	for name, grants := range d.Roles {
		if err := checkName("role", name); err != nil {
			return nil, err
		}
		for _, g := range grants {
			if _, ok := expand(g); !ok {
				return nil, fmt.Errorf("role %q: unknown grant %q (known: %s, %s, %s, *)",
					name, g, strings.Join(allGrants, ", "), GroupTerminalRead, GroupTerminalWrite)
			}
		}
		st.roles[name] = grantSet(grants)
	}
	revoked := map[string]bool{}
	for _, h := range d.Revoked {
		revoked[strings.ToLower(h)] = true
	}
	seenUser := map[string]bool{}
	seenHash := map[[sha256.Size]byte]bool{}
	for i, u := range d.Users {
		if err := checkName("user", u.Name); err != nil {
			return nil, err
		}
		if seenUser[u.Name] {
			return nil, fmt.Errorf("user %q is listed twice", u.Name)
		}
		seenUser[u.Name] = true
		if _, ok := st.roles[u.Role]; !ok {
			return nil, fmt.Errorf("user %q: unknown role %q", u.Name, u.Role)
		}
		for _, t := range u.Tokens {
			var h [sha256.Size]byte
			b, err := hex.DecodeString(t.SHA256)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("user %q: token hash %q is not 64 hex digits", u.Name, shortID(t.SHA256))
			}
			copy(h[:], b)
			if seenHash[h] {
				return nil, fmt.Errorf("user %q: token %s is listed twice", u.Name, shortID(t.SHA256))
			}
			seenHash[h] = true
			if !revoked[strings.ToLower(t.SHA256)] {
				st.tokens = append(st.tokens, tokenEntry{hash: h, user: i})
			}
		}
	}
	return st, nil
}

func grantSet(grants []string) map[string]bool {
	set := map[string]bool{}
	for _, g := range grants {
		members, _ := expand(g)
		for _, m := range members {
			set[m] = true
		}
	}
	return set
}

// checkName accepts 1 to 64 letters, digits and . _ @ -.
func checkName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", kind)
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%s name %q is longer than %d characters", kind, name, maxNameLen)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '.', r == '_', r == '@', r == '-':
		default:
			return fmt.Errorf("%s name %q may only hold letters, digits and . _ @ -", kind, name)
		}
	}
	return nil
}

func shortID(hash string) string {
	hash = strings.ToLower(hash)
	if len(hash) > tokenIDLen {
		return hash[:tokenIDLen]
	}
	return hash
}

// parse decodes and validates the users file's bytes.
func parse(b []byte) (*state, error) {
	var d fileData
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return nil, describeJSONError(b, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, errors.New("unexpected data after the JSON object")
		}
	}
	return compile(d)
}

func describeJSONError(b []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
}

// stamp identifies one version of the users file on disk.
type stamp struct {
	exists bool
	info   os.FileInfo
}

func (a stamp) same(b stamp) bool {
	if a.exists != b.exists {
		return false
	}
	if !a.exists {
		return true
	}
	if a.info == nil || b.info == nil {
		return false
	}
	return os.SameFile(a.info, b.info) &&
		a.info.Size() == b.info.Size() &&
		a.info.ModTime().Equal(b.info.ModTime())
}

// Store is the users file of one state dir. It is safe for concurrent use, and by
// several processes at once: every change takes an advisory lock beside the file
// (users.json.lock), reads the file again under it, and replaces the file whole
// (temporary file, then rename), so no change is lost to another process's and a
// reader never sees half a file. It checks the file's identity, size and
// modification time (one stat) before each operation and re-reads the file when it
// changed, so edits on disk take effect without a restart. Deleting the file removes
// every user.
type Store struct {
	dir  string
	path string

	mu        sync.Mutex
	st        *state // last good contents; never nil
	stamp     stamp  // the version of the file st (or reloadErr) came from
	reloadErr error  // why the file on disk could not be used, or nil
	// gen counts the contents st has held: it moves whenever a reload or an edit
	// takes effect (see Generation).
	gen uint64
	// replicate says the file is one copy of a cluster's users: changes get versions
	// (replica.go). editing is set while an edit holds the writers' lock.
	replicate, editing bool
	// exported is Export's bytes of generation exportedGen.
	exported    []byte
	exportedGen uint64
}

// Open opens the users store in stateDir, creating the directory (mode 0700) if it is
// missing. A missing users file means no users yet. A users file that cannot be read
// or is not valid is an error naming the file and what is wrong with it.
func Open(stateDir string) (*Store, error) {
	if stateDir == "" {
		return nil, errors.New("auth: empty state dir")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: create state dir: %w", err)
	}
	s := &Store{dir: stateDir, path: filepath.Join(stateDir, usersFile)}
	s.st, _ = compile(fileData{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// lockFile takes the exclusive advisory lock that every writer of the users file, in
// any process, holds from reading the file to replacing it. Readers do not take it:
// the file is only ever replaced whole. The lock file itself is never removed, since
// a writer waiting on a removed file would lock a file nobody else does.
func (s *Store) lockFile() (unlock func(), err error) {
	path := s.path + lockSuffix
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auth: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("auth: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// Generation reads the users file again if it changed and returns a count that moves
// whenever the store's users, tokens or roles do: a holder of signed-in connections
// compares it with the last one it saw to learn that rights may have changed.
func (s *Store) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.refreshLocked()
	return s.gen
}

// Path returns the users file's path.
func (s *Store) Path() string { return s.path }

// ReloadError returns why the users file on disk is not in use (for example it was
// edited into invalid JSON), or nil when the store holds the file's current contents.
// While it is non-nil the store keeps the last good contents.
func (s *Store) ReloadError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.refreshLocked()
	return s.reloadErr
}

// refreshLocked re-reads the users file if it changed since it was last read. On
// failure the last good state stays in place and the error is returned (and kept in
// reloadErr until the file changes again).
func (s *Store) refreshLocked() error { return s.loadLocked(false) }

// loadLocked is refreshLocked; with force it reads the file even when its stamp looks
// unchanged.
func (s *Store) loadLocked(force bool) error {
	// One stat in the common case where nothing changed.
	if fi, err := os.Stat(s.path); !force && err == nil && s.stamp.same(stamp{exists: true, info: fi}) {
		return s.reloadErr
	}
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		cur := stamp{}
		if !s.stamp.same(cur) || s.reloadErr != nil {
			s.st, _ = compile(fileData{})
			s.stamp, s.reloadErr = cur, nil
			s.gen++
		}
		return nil
	}
	if err != nil {
		s.reloadErr = fmt.Errorf("auth: %w", err)
		return s.reloadErr
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.reloadErr = fmt.Errorf("auth: %w", err)
		return s.reloadErr
	}
	cur := stamp{exists: true, info: fi}
	if !force && s.stamp.same(cur) {
		return s.reloadErr
	}
	b, err := io.ReadAll(f)
	if err != nil {
		s.reloadErr = fmt.Errorf("auth: read %s: %w", s.path, err)
		return s.reloadErr
	}
	// An empty file where a good one was read before is a file being written in
	// place (an editor, or `>` in a shell, truncates first): taken at its word, it
	// would sign everyone out for the moment the write takes, and on a node of a
	// cluster remove every user on every node (replica.go). The last good contents
	// stay until it holds something. Deleting the file removes every user of a lone
	// host; a cluster node then starts again from the other nodes' users.
	if (s.stamp.exists || s.replicate) && len(bytes.TrimSpace(b)) == 0 {
		s.stamp = cur
		s.reloadErr = fmt.Errorf("auth: users file %s is empty; the last good contents stay in use (delete it to remove every user; a cluster node then takes the other nodes' users)", s.path)
		return s.reloadErr
	}
	st, err := parse(b)
	s.stamp = cur
	if err != nil {
		s.reloadErr = fmt.Errorf("auth: users file %s is not valid: %w", s.path, err)
		return s.reloadErr
	}
	prev := s.st.file
	s.st, s.reloadErr = st, nil
	s.gen++
	if s.replicate && !s.editing {
		// Changed on disk by someone else (`termhost token`, an editor): what changed
		// gets its version now, so the cluster's other nodes take it. A failed write
		// leaves it for the next change.
		if d := st.file.clone(); versionChanges(prev, &d) {
			_ = s.editFromLocked(prev, func(*fileData) error { return errNoChange })
		}
	}
	return nil
}

// editLocked takes the writers' lock, reads the file again, hands a copy of it to
// edit, and writes the result before letting the lock go.
func (s *Store) editLocked(edit func(d *fileData) error) error {
	return s.editFromLocked(s.st.file, edit)
}

// editFromLocked is editLocked where prev is what the store held before: with
// replication on, whatever differs from it (the edit, or a change made to the file by
// hand meanwhile) is given a new version before the file is written (replica.go).
func (s *Store) editFromLocked(prev fileData, edit func(d *fileData) error) error {
	unlock, err := s.lockFile()
	if err != nil {
		return err
	}
	defer unlock()
	s.editing = true
	defer func() { s.editing = false }()
	// Whatever this store read before the lock was taken may be stale, even when the
	// stamp looks the same: read the file again under the lock.
	if err := s.loadLocked(true); err != nil {
		return fmt.Errorf("%w (fix or remove it before changing users)", err)
	}
	d := s.st.file.clone()
	err = edit(&d)
	switch {
	case err != nil && !errors.Is(err, errNoChange):
		return err
	case s.replicate && versionChanges(prev, &d):
		// Written below, even when the edit itself changed nothing.
	case err != nil:
		return err // errNoChange: nothing to write
	}
	for i := range d.Users {
		if d.Users[i].Tokens == nil {
			d.Users[i].Tokens = []fileToken{} // "tokens": [] reads better than null
		}
	}
	st, err := compile(d)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	b, err := json.MarshalIndent(st.file, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	// The new version's modification time is later than the old one's even within
	// one tick of the file system's clock: a reader that saw the old version must see
	// a different stamp even when the new file has the old one's size and reuses its
	// inode number.
	var after time.Time
	if fi, err := os.Stat(s.path); err == nil {
		after = fi.ModTime()
	}
	if err := writeFileAtomic(s.path, append(b, '\n'), after); err != nil {
		return fmt.Errorf("auth: write %s: %w", s.path, err)
	}
	s.st, s.reloadErr = st, nil
	s.gen++
	s.stamp = stamp{exists: true} // a nil info matches nothing: re-read next time
	if fi, err := os.Stat(s.path); err == nil {
		s.stamp.info = fi
	}
	return nil
}

// writeFileAtomic writes b to path with mode 0600 through persistence's one atomic
// write. With a non-zero after, the new file's modification time is made later than
// after.
func writeFileAtomic(path string, b []byte, after time.Time) error {
	return atomicfile.Write(path, b, 0o600, atomicfile.ModifiedAfter(after))
}

func hashToken(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(token))
}

func newToken() (token string, hash [sha256.Size]byte, err error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", hash, fmt.Errorf("auth: random token: %w", err)
	}
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token), nil
}

// newTokenFor makes a token whose short id no token in d has yet.
func newTokenFor(d *fileData) (string, fileToken, error) {
	for range 16 {
		token, h, err := newToken()
		if err != nil {
			return "", fileToken{}, err
		}
		hx := hex.EncodeToString(h[:])
		if !idTaken(d, shortID(hx)) {
			return token, fileToken{SHA256: hx, Created: time.Now().UTC().Truncate(time.Second)}, nil
		}
	}
	return "", fileToken{}, errors.New("auth: could not make a token with a unique id")
}

func idTaken(d *fileData, id string) bool {
	for _, u := range d.Users {
		for _, t := range u.Tokens {
			if shortID(t.SHA256) == id {
				return true
			}
		}
	}
	return false
}

// EnsureOwner makes sure someone can sign in to a new host. On a store with no users
// it creates user "owner" with role owner and writes its token to
// <stateDir>/owner.token (mode 0600), returning created true. On a store that has
// users it changes nothing and returns created false; tokenPath is then where the
// token was written once and may no longer exist.
func (s *Store) EnsureOwner() (tokenPath string, created bool, err error) {
	tokenPath = filepath.Join(s.dir, ownerTokenFile)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return "", false, err
	}
	if len(s.st.file.Users) > 0 {
		return tokenPath, false, nil
	}
	err = s.editLocked(func(d *fileData) error {
		if len(d.Users) > 0 {
			return errNoChange // another process made the first user meanwhile
		}
		created = true
		token, t, err := newTokenFor(d)
		if err != nil {
			return err
		}
		// The token file goes first: if the users file then fails to save, the next
		// call finds no users and tries again, and nobody is left without a token.
		if err := writeFileAtomic(tokenPath, []byte(token+"\n"), time.Time{}); err != nil {
			return fmt.Errorf("auth: write %s: %w", tokenPath, err)
		}
		d.Users = append(d.Users, fileUser{Name: RoleOwner, Role: RoleOwner, Tokens: []fileToken{t}})
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return "", false, err
	}
	return tokenPath, created, nil
}

// AddToken makes a new token for user and returns it; this is the only time the token
// exists outside the hands of whoever receives it. A missing user is created with
// role, which must exist. For an existing user role must be empty or the user's role;
// AddToken does not change roles.
func (s *Store) AddToken(user, role string) (token string, err error) {
	if err := checkName("user", user); err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.editLocked(func(d *fileData) error {
		i := slices.IndexFunc(d.Users, func(u fileUser) bool { return u.Name == user })
		if i >= 0 && role != "" && d.Users[i].Role != role {
			return fmt.Errorf("auth: user %q has role %q, not %q", user, d.Users[i].Role, role)
		}
		if i < 0 {
			if role == "" {
				return fmt.Errorf("auth: new user %q needs a role", user)
			}
			if _, ok := s.st.roles[role]; !ok {
				return fmt.Errorf("auth: unknown role %q", role)
			}
			d.Users = append(d.Users, fileUser{Name: user, Role: role})
			i = len(d.Users) - 1
		}
		var t fileToken
		var err error
		token, t, err = newTokenFor(d)
		if err != nil {
			return err
		}
		d.Users[i].Tokens = append(d.Users[i].Tokens, t)
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// List returns every user, sorted by name, with their tokens' ids and creation times.
// It fails if the users file on disk is not valid.
func (s *Store) List() ([]UserInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		return nil, err
	}
	out := make([]UserInfo, 0, len(s.st.file.Users))
	for _, u := range s.st.file.Users {
		info := UserInfo{Name: u.Name, Role: u.Role, Tokens: make([]TokenInfo, 0, len(u.Tokens))}
		for _, t := range u.Tokens {
			info.Tokens = append(info.Tokens, TokenInfo{ID: shortID(t.SHA256), Created: t.Created})
		}
		slices.SortStableFunc(info.Tokens, func(a, b TokenInfo) int { return a.Created.Compare(b.Created) })
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b UserInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Revoke removes every token of the user named userOrTokenID, or else the one token
// whose id (as List shows it) is userOrTokenID, and returns how many tokens it
// removed. The user itself stays, with its role. It returns ErrNotFound when no user
// or token matches. A revoked token's hash stays in the file's revoked list, so no
// other copy of the file (another node's, a backup) brings it back.
func (s *Store) Revoke(userOrTokenID string) (int, error) {
	if userOrTokenID == "" {
		return 0, ErrNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	err := s.editLocked(func(d *fileData) error {
		for i, u := range d.Users {
			if u.Name == userOrTokenID {
				n = len(u.Tokens)
				if n == 0 {
					return errNoChange
				}
				for _, t := range u.Tokens {
					d.revoke(t.SHA256)
				}
				d.Users[i].Tokens = nil
				return nil
			}
		}
		id := strings.ToLower(userOrTokenID)
		if len(id) == tokenIDLen {
			for i, u := range d.Users {
				kept := u.Tokens[:0]
				for _, t := range u.Tokens {
					if shortID(t.SHA256) == id {
						n++
						d.revoke(t.SHA256)
						continue
					}
					kept = append(kept, t)
				}
				d.Users[i].Tokens = kept
			}
		}
		if n == 0 {
			return fmt.Errorf("%w: %q", ErrNotFound, userOrTokenID)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return 0, err
	}
	return n, nil
}

// Authenticate returns the principal a token signs in as, or nobody and false. It
// re-reads the users file first if it changed; if the file has become invalid the
// last good contents stay in use.
func (s *Store) Authenticate(token string) (Principal, bool) {
	if token == "" || len(token) > maxTokenLen {
		return Nobody(), false
	}
	h := hashToken(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.refreshLocked() // on failure the last good state is used; see ReloadError
	return s.lookupLocked(h)
}

// fileKey is what one stat says of the users file: which file it is, its size and
// when it was last changed.
type fileKey struct {
	dev, ino, size uint64
	mtime, ctime   unix.Timespec
}

func statKey(path string, k *fileKey) bool {
	// x/sys/unix names the times alike on every Unix (syscall's Stat_t does not).
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	*k = fileKey{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim, ctime: st.Ctim}
	return true
}

// Follow follows one token's sign-in, for a connection that asks on every frame it
// reads: each call answers as Authenticate(token) would now. The token is hashed
// once, and while the users file is the one last seen (one stat, which is the
// per-frame cost left) and the store unchanged, the last answer is given again
// without reading the store. A revoked token or a changed role therefore still
// counts from the next call.
func (s *Store) Follow(token string) func() (Principal, bool) {
	if token == "" || len(token) > maxTokenLen {
		return func() (Principal, bool) { return Nobody(), false }
	}
	h := hashToken(token)
	// Guarded by s.mu.
	var (
		seen  fileKey
		valid bool
		gen   uint64
		p     Principal
		ok    bool
	)
	return func() (Principal, bool) {
		var k fileKey
		have := statKey(s.path, &k)
		s.mu.Lock()
		defer s.mu.Unlock()
		if have && valid && k == seen && gen == s.gen {
			return p, ok
		}
		// The key was read before the file is: a change made in between is seen
		// again by the next call.
		_ = s.refreshLocked()
		p, ok = s.lookupLocked(h)
		seen, valid, gen = k, have, s.gen
		return p, ok
	}
}

// lookupLocked is who the token with hash h signs in as; s.mu is held.
func (s *Store) lookupLocked(h [sha256.Size]byte) (Principal, bool) {
	user := -1
	for _, t := range s.st.tokens {
		if subtle.ConstantTimeCompare(t.hash[:], h[:]) == 1 {
			user = t.user
		}
	}
	if user < 0 {
		return Nobody(), false
	}
	u := s.st.file.Users[user]
	return Principal{User: u.Name, Role: u.Role, grants: s.st.roles[u.Role]}, true
}

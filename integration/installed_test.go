package integration

import (
	"os"
	"testing"
)

// A host that remembers its installed scripts still starts every shell with the
// script as embedded: one a temp-folder cleaner removed, or somebody changed, since
// it was installed is installed again.
func TestInstalledScriptRemovedOrChanged(t *testing.T) {
	tmp := t.TempDir()
	var in Installed
	opts := InjectOptions{Nonce: "n", TempDir: tmp, Installed: &in}
	want, _ := scriptBytes("bash.sh")
	inject := func(step string) string {
		t.Helper()
		inj, ok, err := Inject("bash", nil, opts)
		if !ok || err != nil {
			t.Fatalf("%s: Inject = %v, %v", step, ok, err)
		}
		defer inj.Close()
		path := inj.Args[1]
		if got, err := os.ReadFile(path); err != nil || string(got) != string(want) {
			t.Fatalf("%s: the script at %s is not the bash script (%v)", step, path, err)
		}
		return path
	}
	path := inject("first")
	if again := inject("again"); again != path {
		t.Fatalf("the script moved from %s to %s", path, again)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	inject("after it was removed")
	if err := os.WriteFile(path, []byte("echo tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	inject("after it was changed")
	// The same length, written in place: a new time.
	changed := []byte(string(want[:len(want)-1]) + "#")
	if err := os.WriteFile(path, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	old := fi.ModTime().Add(-2 * 1e9)
	_ = os.Chtimes(path, old, old)
	inject("after it was changed in place")
}

// BenchmarkInject is a bash terminal's injection, checking the script's folder and
// contents every time (nil) and remembering them (a host's Installed).
func BenchmarkInject(b *testing.B) {
	for _, c := range []struct {
		name string
		in   *Installed
	}{{"checked", nil}, {"remembered", &Installed{}}} {
		b.Run(c.name, func(b *testing.B) {
			opts := InjectOptions{Nonce: "n", TempDir: b.TempDir(), Installed: c.in}
			b.ReportAllocs()
			for b.Loop() {
				inj, ok, err := Inject("bash", nil, opts)
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
				inj.Close()
			}
		})
	}
}

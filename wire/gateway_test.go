package wire

import "testing"

// The digest names one exact call: the same four fields give the same
// digest, and a change to any one of them (even one that moves text from
// one field to the next) gives another.
func TestCallDigest(t *testing.T) {
	base := CallDigest("shell", fxArgs, "shell-scratch", Private)
	if got, want := base.String(), "5ec286d95466162159950bdc7fff949a1f7caad381e234657157236593bea9ef"; got != want {
		t.Fatalf("CallDigest = %s, want %s (the fixture msg-approval_request.json holds it too)", got, want)
	}
	if CallDigest("shell", fxArgs, "shell-scratch", Private) != base {
		t.Fatal("CallDigest is not deterministic")
	}
	for name, d := range map[string]Hash32{
		"tool":      CallDigest("read_file", fxArgs, "shell-scratch", Private),
		"arguments": CallDigest("shell", fxArgs+" ", "shell-scratch", Private),
		"grant":     CallDigest("shell", fxArgs, "shell-scratch2", Private),
		"taint":     CallDigest("shell", fxArgs, "shell-scratch", Secret),
		"shifted":   CallDigest("shel", "l"+fxArgs, "shell-scratch", Private),
	} {
		if d == base {
			t.Errorf("changing the %s leaves the digest unchanged", name)
		}
	}
	if got := DigestPrefix(base); got != "5ec286d954661621" {
		t.Errorf("DigestPrefix = %q", got)
	}
}

func TestValidMattermostID(t *testing.T) {
	for s, want := range map[string]bool{
		fxOwner:                                true,
		fxPost:                                 true,
		"":                                     false,
		fxOwner[:25]:                           false,
		fxOwner + "a":                          false,
		"8XK3Q9WZB7F1JDM4YTR6HCN2PA":           false,
		"8xk3q9wzb7f1jdm4ytr6hcn2p-":           false,
		"8xk3q9wzb7f1jdm4ytr6hcn2p\n":          false,
		"8xk3q9wzb7f1jdm4ytr6hcn2p\u00e9"[:26]: false,
	} {
		if got := ValidMattermostID(s); got != want {
			t.Errorf("ValidMattermostID(%q) = %v, want %v", s, got, want)
		}
	}
}

package bxctl

import (
	"math/big"
	"regexp"
	"testing"

	"boxmaker/wire"
)

// The naive oracle for a head as posted: canonical decimal (no leading
// zero), a colon, 64 lowercase hex digits, the seq no larger than a uint64.
var postedShape = regexp.MustCompile(`^(0|[1-9][0-9]*):[0-9a-f]{64}$`)

func oracleAccepts(s string) bool {
	if !postedShape.MatchString(s) {
		return false
	}
	n, _ := new(big.Int).SetString(s[:len(s)-65], 10)
	return n.IsUint64()
}

// FuzzParsePostedHead: parsePostedHead accepts exactly what the oracle
// does, and what it accepts is the one spelling of its head.
func FuzzParsePostedHead(f *testing.F) {
	h := wire.Sha256([]byte("x")).String()
	for _, s := range []string{"0:" + h, "41:" + h, "18446744073709551615:" + h, "18446744073709551616:" + h,
		"041:" + h, "41:" + h[:63] + "A", "41" + h, ":" + h, "41:" + h + ":", "-0:" + h, "٤١:" + h} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		head, err := parsePostedHead(s)
		if (err == nil) != oracleAccepts(s) {
			t.Fatalf("%q: parse error %v, oracle accepts %v", s, err, oracleAccepts(s))
		}
		if err == nil && formatPostedHead(head) != s {
			t.Fatalf("%q parsed to %+v, which formats as %q", s, head, formatPostedHead(head))
		}
	})
}

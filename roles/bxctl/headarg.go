package bxctl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"boxmaker/wire"
)

// The argument of `bxctl audit verify --head`: the audit head as gatewayd
// posts it to the owner (issue 14), SEQ:HASH, the seq in decimal and the
// hash as 64 lowercase hex digits, "41:5ec2…". It has exactly one spelling:
// a head copied by hand must be the one posted, so nothing is guessed (no
// leading zeros, no sign, no uppercase, no spaces trimmed).

// formatPostedHead writes h as parsePostedHead reads it.
func formatPostedHead(h wire.AuditHead) string {
	return strconv.FormatUint(h.Seq, 10) + ":" + h.Hash.String()
}

// parsePostedHead reads SEQ:HASH; its error says what is wrong, for the
// owner.
func parsePostedHead(s string) (wire.AuditHead, error) {
	seq, hash, ok := strings.Cut(s, ":")
	if !ok {
		return wire.AuditHead{}, errors.New("expected SEQ:HASH, as gatewayd posts it (41:5ec2…), but there is no colon")
	}
	n, err := parseSeq(seq)
	if err != nil {
		return wire.AuditHead{}, err
	}
	h, err := parseHash(hash)
	if err != nil {
		return wire.AuditHead{}, err
	}
	return wire.AuditHead{Seq: n, Hash: h}, nil
}

// parseSeq reads a seq written in canonical decimal.
func parseSeq(s string) (uint64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("the seq \"%s\" is not a decimal number (digits only, as posted)", wire.Printable(s))
		}
	}
	switch {
	case s == "":
		return 0, errors.New("the seq before the colon is missing")
	case len(s) > 1 && s[0] == '0':
		return 0, fmt.Errorf("the seq \"%s\" has a leading zero; copy it as posted", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the seq %s is larger than any seq (at most %d)", s, uint64(1<<64-1))
	}
	return n, nil
}

// parseHash reads 64 lowercase hex digits.
func parseHash(s string) (wire.Hash32, error) {
	h, err := wire.ParseHash32(s)
	if err == nil {
		return h, nil
	}
	if _, lerr := wire.ParseHash32(strings.ToLower(s)); lerr == nil {
		return h, errors.New("the hash has uppercase letters; gatewayd posts it in lowercase: copy it as posted")
	}
	return h, fmt.Errorf("the hash must be 64 lowercase hex digits (a SHA-256, as posted), not \"%s\" (%d characters)",
		wire.Printable(s), len(s))
}

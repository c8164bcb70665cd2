package audit

import "boxmaker/wire"

// prepared is a line hashed and parsed: the work that does not depend on the
// lines before it, and so can be done on any core, in any order.
type prepared struct {
	hash   wire.Hash32
	size   uint64
	parsed bool
	slow   bool   // parseFast refused it and wire.Unmarshal accepted it
	why    string // why it does not parse
	rec    lineRec
	// newline: the line ended with one (only the last line of a file may
	// not); set by VerifyDir's workers, which cut the lines.
	newline bool
}

func (p *prepared) prepare(d *parser, b []byte) {
	p.hash, p.size = wire.Sha256(b), uint64(len(b))
	p.parsed, p.why, p.slow = parseLine(d, b, &p.rec)
}

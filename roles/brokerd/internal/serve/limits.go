package serve

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// A socket holds at most its cap of connections at once (issue 12: 20,000
// idle connections on broker.sock used up brokerd's descriptors and the
// owner's bxctl approvals hung). Each socket has its own slots, so a flood
// of broker.sock never takes admin.sock's, and the caps are checked
// against the descriptor limit at start, so neither can use it up.

// fdsPerCall is the descriptors one broker.sock connection may bring with
// it while its call runs: the connection, the Podman API's, the attach
// stream, and the egress proxy's. The budget counts each broker connection
// this many times.
const fdsPerCall = 4

// fdsReserve is kept for everything else: the audit log, grant and state
// files, the listeners, the runtime's own.
const fdsReserve = 64

// raiseNoFile raises the soft descriptor limit to the hard one (Go's
// runtime does so too since 1.19; brokerd does not rely on it) and returns
// the limit now in force.
func raiseNoFile() (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err == nil {
			lim = want
		}
	}
	return lim.Cur, nil
}

// checkBudget refuses caps that together could use up limit descriptors.
func checkBudget(s config.Sockets, limit uint64) error {
	need := uint64(s.MaxBrokerConnections)*fdsPerCall + uint64(s.MaxAdminConnections) + fdsReserve
	if need > limit {
		return fmt.Errorf("[sockets] max_broker_connections = %d and max_admin_connections = %d need %d file descriptors "+
			"(%d per broker connection, %d in reserve), more than the limit of %d: lower them, or raise the limit (LimitNOFILE)\n%s",
			s.MaxBrokerConnections, s.MaxAdminConnections, need, fdsPerCall, fdsReserve, limit, runbook.See("descriptor-limit"))
	}
	return nil
}

// slots is one socket's connection cap: a buffered channel holds a token
// for each connection being served.
type slots struct {
	free chan struct{}
	full []byte // the error frame an over-cap connection gets
	// Used by the socket's accept loop only: connections refused since
	// the last notice, and when that was.
	refused int
	noticed time.Time
}

func newSlots(sock socket, n int) *slots {
	body, err := wire.MarshalEnvelope(wire.Reply(0, true, wire.WireError{Code: wire.Internal,
		Detail: fmt.Sprintf("%s is serving its %d connections; try again later", sock.name, n)}))
	if err != nil {
		panic(err) // a constant message always encodes
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return &slots{free: make(chan struct{}, n), full: append(frame, body...)}
}

// take claims a slot for a new connection; false when all are taken.
func (s *slots) take() bool {
	select {
	case s.free <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *slots) give() { <-s.free }

// noticeEvery is how often a socket at its cap says so: once, not once per
// connection of a flood.
const noticeEvery = time.Minute

// refuse answers an over-cap connection with the error frame and closes
// it, without reading: the socket buffer of a new connection is empty, so
// the write does not wait, and the deadline bounds it if it should. It
// returns the owner's notice when one is due.
func (s *slots) refuse(conn net.Conn, sock socket, now time.Time) (notice string) {
	_ = conn.SetWriteDeadline(now.Add(10 * time.Millisecond))
	_, _ = conn.Write(s.full)
	conn.Close()
	s.refused++
	if now.Sub(s.noticed) < noticeEvery {
		return ""
	}
	notice = fmt.Sprintf("brokerd: %s is serving its %d connections: refused %d more since the last notice\n%s",
		sock.name, cap(s.free), s.refused, runbook.See("socket-full"))
	s.refused, s.noticed = 0, now
	return notice
}

package audit

import (
	"errors"
	"fmt"

	"boxmaker/wire"
)

// Sentinel errors, for errors.Is: brokerd chooses its exit status and its
// answer to loopd by them.
var (
	// ErrAlreadyRunning: another process (or Writer) holds the log's lock.
	ErrAlreadyRunning = errors.New("brokerd is already running")
	// ErrChainBroken: startup found a chain failure; see BrokenError.
	ErrChainBroken = errors.New("audit: the chain is broken")
	// ErrHeadMismatch: the log does not hold the last record the head kept
	// outside it names, or the head is missing or damaged; see HeadError.
	ErrHeadMismatch = errors.New("audit: the log does not hold its head")
	// ErrNothingToAccept: AcceptBreak was asked for, but the chain is intact
	// and the log holds its head.
	ErrNothingToAccept = errors.New("nothing to accept")
	// ErrUnavailable: a write or sync failed; this and every later Append
	// fail, and the broker answers audit_unavailable.
	ErrUnavailable = errors.New("audit: the log cannot be written")
	// ErrClosed: Append after Close.
	ErrClosed = errors.New("audit: the writer is closed")
)

var errAlreadyRunning = fmt.Errorf("%w\nsee docs/runbook.md#brokerd-already-running", ErrAlreadyRunning)

var errNothingToAccept = fmt.Errorf("audit: --accept-break was given, but %w: the chain is not broken\n"+
	"see docs/runbook.md#audit-accept-break-nothing", ErrNothingToAccept)

// BrokenError is Open's error when the chain is broken and AcceptBreak was
// not given.
type BrokenError struct{ Failure ChainFailure }

func (e *BrokenError) Error() string {
	return fmt.Sprintf("audit: the chain is broken at %s: %s\nsee docs/runbook.md#audit-chain-broken",
		e.Failure.Location, wire.Printable(e.Failure.What))
}

func (e *BrokenError) Unwrap() error { return ErrChainBroken }

// unavailable wraps the cause of a writer's failure.
func unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

package wire

// Admin messages, accepted only on admin.sock (M3a §6).

// Approvals asks for the pending approvals.
type Approvals struct{}

// ApprovalList answers Approvals.
type ApprovalList struct {
	Items []PendingApproval `json:"items"`
}

// Approve approves a pending call; the answer is the re-decision.
type Approve struct {
	Approval uint64 `json:"approval"`
}

// ApproveResult carries the re-decision made when the owner approved.
type ApproveResult struct {
	Outcome DecisionRecord `json:"outcome"`
}

// Refuse refuses a pending call, with the owner's reason if any.
type Refuse struct {
	Approval uint64  `json:"approval"`
	Reason   *string `json:"reason"`
}

// OK answers Refuse.
type OK struct{}

// CheckGrants asks brokerd to load the grant files and report problems.
type CheckGrants struct{}

// GrantsReport answers CheckGrants; Problems is empty when the set is valid
// and every secret a grant names can be read.
type GrantsReport struct {
	Problems []GrantProblem `json:"problems"`
}

// PendingApproval is one waiting call, as listed to the owner.
type PendingApproval struct {
	Approval  uint64    `json:"approval"`
	Session   SessionID `json:"session"`
	Call      CallID    `json:"call"`
	Tool      string    `json:"tool"`
	Arguments string    `json:"arguments"`
	Grant     string    `json:"grant"`
	Taint     DataClass `json:"taint"`
	Created   Timestamp `json:"created"`
	Expires   Timestamp `json:"expires"`
}

// GrantProblem is one reason a grant file is invalid or, in a GrantsReport,
// that a grant names a secret brokerd cannot read (issue 15).
type GrantProblem struct {
	File    string  `json:"file"`
	Line    *uint64 `json:"line"`
	Problem string  `json:"problem"`
}

func (Approvals) Kind() string     { return KindApprovals }
func (ApprovalList) Kind() string  { return KindApprovalList }
func (Approve) Kind() string       { return KindApprove }
func (ApproveResult) Kind() string { return KindApproveResult }
func (Refuse) Kind() string        { return KindRefuse }
func (OK) Kind() string            { return KindOK }
func (CheckGrants) Kind() string   { return KindCheckGrants }
func (GrantsReport) Kind() string  { return KindGrantsReport }

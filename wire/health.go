package wire

// Health asks a daemon how it stands, for bxctl doctor (issue 27):
// brokerd answers it on admin.sock, loopd on the owner's loop.sock (not on
// gatewayd's or brokerd's). It changes nothing and carries back nothing an
// owner could not learn already (check_grants, the jobs list, the journal).
type Health struct{}

// HealthReport answers Health: the daemon's checks, in its order, and for
// brokerd the audit log's head (its last synced record; null when the log
// is empty or for loopd), which bxctl doctor verifies the chain against.
type HealthReport struct {
	Checks []HealthCheck `json:"checks"`
	Head   *AuditHead    `json:"head"`
}

// HealthCheck is one line of bxctl doctor: what was checked, whether it
// holds, what was seen, and when it fails the runbook line that explains
// it ("see docs/runbook.md#<anchor>"; "" when it holds). A client prints
// the name and detail as data and the line only in that exact form.
type HealthCheck struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`
	Runbook string `json:"runbook"`
}

func (Health) Kind() string       { return KindHealth }
func (HealthReport) Kind() string { return KindHealthReport }

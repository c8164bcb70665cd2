package audit

import (
	"fmt"
	"path/filepath"
)

// VerifyDir verifies every log file in dir, oldest first, from the first
// record ever. An error means the files could not be read; what they hold is
// in the report.
func VerifyDir(dir string) (ChainReport, error) {
	names, err := logNames(dir)
	if err != nil {
		return ChainReport{}, fmt.Errorf("audit: %w", err)
	}
	v := NewChainVerifier()
	for _, name := range names {
		if err := feedFile(v, filepath.Join(dir, name)); err != nil {
			return ChainReport{}, err
		}
	}
	return v.Finish(), nil
}

package main

import runbookcheck "boxmaker/runbook/check"

// checkRunbook is runbook/check, the same check runbook's own test runs.
func checkRunbook(dir string) ([]string, error) { return runbookcheck.Check(dir) }

// Package policy decides every tool call: it loads the grant files, parses a
// call's arguments strictly, matches them against the grants and returns a
// Decision (M3a §3). It is the only place a Decision is built, and a
// Decision authorises at most one run.
//
// Grants are read from disk at every decision, never cached, so an edit
// applies to the next call. The package imports only wire and the standard
// library (plus the vetted JSON and TOML modules through wire).
package policy

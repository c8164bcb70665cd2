#!/bin/sh
# Remakes the encoder outputs the tests read: what a tool in the tool image
# (Debian 12's busybox-static 1.35.0) prints for a secret file, and checks
# that a Debian host's coreutils base64 and vim's xxd print the same bytes.
# Run it in this folder: sh make.sh
set -eu
bb=busybox
printf 'bxk_live_9fQ2mZ7rT4wY8nL1pK6vH3s\n' > key.txt
# 32 binary bytes: sha256("boxmaker redact test").
printf 'boxmaker redact test' | sha256sum | cut -c1-64 | $bb xxd -r -p > bin.key
# A longer file, so that the value's encodings cross a line break.
{ printf 'config: region=eu-west-1 timeout=30s\ntoken='; cat key.txt; printf 'retries=5 backoff=exponential\n'; } > long.txt
enc() { # name, then the pipeline's input command
	name=$1; shift
	"$@" | $bb base64 > b64-$name.bb
	"$@" | base64 | cmp - b64-$name.bb
	"$@" | $bb xxd -p > xxd-$name.bb
	"$@" | xxd -p | cmp - xxd-$name.bb
}
enc nl cat key.txt
enc off1 sh -c 'printf x; cat key.txt'
enc off2 sh -c 'printf xy; cat key.txt'
enc long cat long.txt
enc bin cat bin.key
# Caught too: od's bytes are hex with spaces and line breaks between them.
$bb od -An -tx1 key.txt > od.bb
# Not caught (the taint rule is the defence): reversed, folded into short
# lines, and dumps with offsets and a text column between the lines.
$bb rev key.txt > rev.bb
$bb fold -w 8 key.txt > fold.bb
$bb xxd key.txt > xxd-dump.bb
$bb hexdump -C key.txt > hexdump.bb

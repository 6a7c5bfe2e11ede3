package main

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
)

// mustWriteLine marks the CLI's -v=9 record of a whole-state write it decided (pulumi pkg/v3
// v3.274.1 backend/snapshot.go sameSnapshotMutation.mustWrite: "mustWrite() true because of
// <field>", a field name only).
var mustWriteLine = []byte("mustWrite() true")

// logRecord matches a line of the CLI's own log: a JSON record (pulumi v3.274.1 writes its
// -v log through slog's JSON handler) or glog's form ("I1129 14:33:05.094340 ...").
var logRecord = regexp.MustCompile(`^(\{"time":"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} )`)

// keepPreviewLog copies to w what of a `pulumi preview -v=9 --logtostderr` output may be
// kept on disk: the CLI's display and errors (what every other command's log keeps) and the
// mustWrite records, which it counts. Other log records go: they print resources' inputs and
// outputs, and the engine masks only the values marked secret.
func keepPreviewLog(r io.Reader, w io.Writer) (writes int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20) // a record can print a whole state
	for sc.Scan() {
		line := sc.Bytes()
		isWrite := bytes.Contains(line, mustWriteLine)
		if isWrite {
			writes++
		}
		if isWrite || !logRecord.Match(line) {
			if _, err := w.Write(append(line, '\n')); err != nil {
				return writes, err
			}
		}
	}
	return writes, sc.Err()
}

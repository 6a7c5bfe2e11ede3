package pve

import "time"

// Realistic durations of the lab's worker tasks (time scale 1), named so
// that benchmarks compute a cluster's critical path from the same numbers
// (see TaskDurations).
const (
	createDuration   = time.Second             // qmcreate: allocate the disks, write the config
	startDuration    = 1500 * time.Millisecond // qmstart: cloud-init drive, QEMU up
	downloadOverhead = time.Second             // download-url: connect, verify, rename
	downloadRate     = 100 << 20               // download-url: bytes a second
)

// TaskDurations are how long the lab's tasks take at time scale 1.
type TaskDurations struct {
	// Create is a qmcreate of a VM from parameters; Start a qmstart.
	Create, Start time.Duration
	// ISODownload is a download-url of a boot ISO (content iso).
	ISODownload time.Duration
}

// RealisticTaskDurations are the durations the lab's workers take at time
// scale 1 (they are multiplied by Options.TimeScale).
func RealisticTaskDurations() TaskDurations {
	_, isoSize := remoteFileSize("iso", "")
	return TaskDurations{Create: createDuration, Start: startDuration, ISODownload: downloadDuration(isoSize)}
}

// downloadDuration is how long a download-url of size bytes takes.
func downloadDuration(size int64) time.Duration {
	return time.Duration(size/downloadRate)*time.Second + downloadOverhead
}

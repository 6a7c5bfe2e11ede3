// Package eventctx is for tests: a context whose deadline passes when the
// test says so (an event, such as the third refused attempt), so that a
// test of what happens at a deadline needs no clock.
package eventctx

import (
	"context"
	"sync"
	"time"
)

// Deadline is a context.Context whose deadline passes when Pass is called.
// Until then it reports a deadline an hour ahead, as a caller's timeout
// would, so that code which retries only under a deadline retries.
type Deadline struct {
	context.Context
	at   time.Time
	done chan struct{}
	once sync.Once
}

// New returns a Deadline that has not passed.
func New() *Deadline {
	return &Deadline{Context: context.Background(), done: make(chan struct{})}
}

// Within returns a Deadline with parent's values (a request's logger and
// URN) that reports its deadline left from now, for code that sizes its
// waits by the time left. Only Pass ends it.
func Within(parent context.Context, left time.Duration) *Deadline {
	return &Deadline{Context: parent, at: time.Now().Add(left), done: make(chan struct{})}
}

// Pass makes the deadline pass: Done closes and Err says
// context.DeadlineExceeded. Calling it again does nothing.
func (c *Deadline) Pass() { c.once.Do(func() { close(c.done) }) }

// Deadline reports a deadline far ahead (Within's, if so made): only Pass
// ends the context.
func (c *Deadline) Deadline() (time.Time, bool) {
	if !c.at.IsZero() {
		return c.at, true
	}

	return time.Now().Add(time.Hour), true
}

// Done closes when Pass is called.
func (c *Deadline) Done() <-chan struct{} { return c.done }

// Err is context.DeadlineExceeded once Pass was called, else nil.
func (c *Deadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

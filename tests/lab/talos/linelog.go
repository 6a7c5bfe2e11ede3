package talos

import (
	"context"
	"sync"
)

// lineLog is a bounded log of lines that readers can follow: the kernel
// ring buffer behind Dmesg and machined's per-service logs behind Logs
// (internal/app/machined/pkg/runtime/logging, a circular buffer per service).
// It lives for one boot; closing it ends every follower.
type lineLog struct {
	mu     sync.Mutex
	cond   *sync.Cond
	lines  []string
	next   int // position of the next line
	closed bool
}

const lineLogCapacity = 4096

func newLineLog() *lineLog {
	l := &lineLog{}
	l.cond = sync.NewCond(&l.mu)

	return l
}

func (l *lineLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()

	if l.closed {
		return
	}

	l.lines = append(l.lines, line)
	if len(l.lines) > lineLogCapacity {
		l.lines = l.lines[1:]
	}

	l.next++
	l.cond.Broadcast()
}

func (l *lineLog) close() {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
}

// read sends the last tail lines (all when tail < 0) and, with follow, every
// line added later until ctx ends or the log closes.
func (l *lineLog) read(ctx context.Context, tail int, follow bool, send func(string) error) error {
	l.mu.Lock()
	oldest := l.next - len(l.lines)
	pos := oldest

	if tail >= 0 {
		pos = max(l.next-tail, oldest)
	}
	l.mu.Unlock()

	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()

	for {
		l.mu.Lock()

		for follow && pos >= l.next && !l.closed && ctx.Err() == nil {
			l.cond.Wait()
		}

		oldest = l.next - len(l.lines)
		pos = max(pos, oldest)

		if pos >= l.next || ctx.Err() != nil {
			l.mu.Unlock()

			return nil
		}

		line := l.lines[pos-oldest]
		pos++
		l.mu.Unlock()

		if err := send(line); err != nil {
			return err
		}
	}
}

package enginewatch

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestEngineAddress(t *testing.T) {
	for args, want := range map[string]string{
		"p 127.0.0.1:40000":                  "127.0.0.1:40000",
		"p --logtostderr -v=3 127.0.0.1:123": "127.0.0.1:123",
		"p":                                  "",
		"p --debug":                          "",
	} {
		if got := EngineAddress(strings.Fields(args)); got != want {
			t.Errorf("%q: %q, want %q", args, got, want)
		}
	}
}

// While the engine's address answers, Watch waits; once it refuses
// connections (the engine process is gone), Watch exits the process.
func TestWatchExitsWhenTheEngineGoes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	exited := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Watch(ctx, ln.Addr().String(), Options{Interval: 10 * time.Millisecond, Refusals: 2,
		Exit: func(reason string) { exited <- reason }})
	time.Sleep(100 * time.Millisecond) // ten checks against a live engine
	select {
	case r := <-exited:
		t.Fatalf("exited while the engine answers: %s", r)
	default:
	}
	ln.Close()
	if r := <-exited; r == "" {
		t.Fatal("no reason given")
	}
}

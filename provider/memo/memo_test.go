package memo

import "testing"

func TestKeyOfSeparatesParts(t *testing.T) {
	if KeyOf("ab", "c") == KeyOf("a", "bc") {
		t.Fatal(`("ab", "c") and ("a", "bc") have the same key`)
	}
	if x1, x2 := KeyOf("x"), KeyOf("x"); x1 != x2 {
		t.Fatal("the same arguments have different keys")
	}
}

func TestCacheComputesOncePerKey(t *testing.T) {
	var c Cache[int]
	calls := 0
	f := func() int { calls++; return calls }
	if a, b := c.Do(KeyOf("a"), f), c.Do(KeyOf("a"), f); a != 1 || b != 1 || calls != 1 {
		t.Fatalf("Do twice for one key: %d, %d after %d calls; want 1, 1 after 1", a, b, calls)
	}
	if v := c.Do(KeyOf("b"), f); v != 2 {
		t.Fatalf("another key: %d, want a new computation (2)", v)
	}
}

func TestCacheStartsOverWhenFull(t *testing.T) {
	c := Cache[int]{Max: 2}
	c.Put(KeyOf("a"), 1)
	c.Put(KeyOf("b"), 2)
	c.Put(KeyOf("c"), 3)
	if _, ok := c.Get(KeyOf("a")); ok {
		t.Fatal("a full cache kept its old entries")
	}
	if v, ok := c.Get(KeyOf("c")); !ok || v != 3 {
		t.Fatalf("the entry put after starting over: %d, %v", v, ok)
	}
}

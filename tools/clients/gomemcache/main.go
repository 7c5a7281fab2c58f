// gomemcache (github.com/bradfitz/gomemcache, text protocol) against a
// memcached-compatible server: the client-matrix checks. tools/client-matrix
// builds it in a temporary module that fetches gomemcache.
//
//	gomemcache-check -host H -port P [-mode text]
//
// The serialised object is a gob-encoded struct stored with flags 1. Prints
// PASS/FAIL/SKIP lines and "N passed, N failed"; exits 1 on a failure.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

const prefix = "gomc:"

type record struct {
	User   int
	Roles  []string
	Ratio  float64
	Nested map[string][]int
}

var passed, failed int

func check(name string, fn func() error) {
	if err := fn(); err != nil {
		failed++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	passed++
	fmt.Printf("PASS %s\n", name)
}

func expect(cond bool, format string, args ...any) error {
	if cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

func getString(mc *memcache.Client, key string) (string, error) {
	it, err := mc.Get(key)
	if err != nil {
		return "", err
	}
	return string(it.Value), nil
}

func main() {
	host := flag.String("host", envOr("KURA_HOST", "127.0.0.1"), "server host")
	port := flag.String("port", os.Getenv("KURA_PORT"), "server port")
	mode := flag.String("mode", "text", "protocol (gomemcache has only text)")
	flag.Parse()
	if *mode != "text" {
		fmt.Println("SKIP: gomemcache speaks only the text protocol")
		os.Exit(77)
	}
	mc := memcache.New(*host + ":" + *port)
	mc.Timeout = 5 * time.Second
	mc.MaxIdleConns = 4
	p := prefix
	fmt.Printf("gomemcache, text protocol, %s:%s\n", *host, *port)

	check("set/get", func() error {
		_ = mc.Delete(p + "k")
		if _, err := mc.Get(p + "k"); !errors.Is(err, memcache.ErrCacheMiss) {
			return fmt.Errorf("a deleted key: %v", err)
		}
		if err := mc.Set(&memcache.Item{Key: p + "k", Value: []byte("hello")}); err != nil {
			return err
		}
		v, err := getString(mc, p+"k")
		if err != nil {
			return err
		}
		return expect(v == "hello", "get after set read %q", v)
	})

	check("serialised object (flags)", func() error {
		rec := record{User: 42, Roles: []string{"admin", "dev"}, Ratio: 0.5,
			Nested: map[string][]int{"t": {1, 2}}}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(rec); err != nil {
			return err
		}
		if err := mc.Set(&memcache.Item{Key: p + "obj", Value: buf.Bytes(), Flags: 1}); err != nil {
			return err
		}
		it, err := mc.Get(p + "obj")
		if err != nil {
			return err
		}
		if it.Flags != 1 {
			return fmt.Errorf("flags %d, want 1", it.Flags)
		}
		var got record
		if err := gob.NewDecoder(bytes.NewReader(it.Value)).Decode(&got); err != nil {
			return err
		}
		return expect(reflect.DeepEqual(got, rec), "the struct read back differs: %+v", got)
	})

	check("add/replace", func() error {
		_ = mc.Delete(p + "ar")
		if err := mc.Replace(&memcache.Item{Key: p + "ar", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
			return fmt.Errorf("replace of a missing key: %v", err)
		}
		if err := mc.Add(&memcache.Item{Key: p + "ar", Value: []byte("first")}); err != nil {
			return fmt.Errorf("add of a missing key: %v", err)
		}
		if err := mc.Add(&memcache.Item{Key: p + "ar", Value: []byte("second")}); !errors.Is(err, memcache.ErrNotStored) {
			return fmt.Errorf("add of an existing key: %v", err)
		}
		if v, _ := getString(mc, p+"ar"); v != "first" {
			return fmt.Errorf("add changed the value to %q", v)
		}
		if err := mc.Replace(&memcache.Item{Key: p + "ar", Value: []byte("third")}); err != nil {
			return fmt.Errorf("replace of an existing key: %v", err)
		}
		v, _ := getString(mc, p+"ar")
		return expect(v == "third", "replace did not store: %q", v)
	})

	check("cas", func() error {
		if err := mc.Set(&memcache.Item{Key: p + "cas", Value: []byte("v1")}); err != nil {
			return err
		}
		a, err := mc.Get(p + "cas")
		if err != nil {
			return err
		}
		b, err := mc.Get(p + "cas") // a second holder of the same cas
		if err != nil {
			return err
		}
		a.Value = []byte("v2")
		if err := mc.CompareAndSwap(a); err != nil {
			return fmt.Errorf("cas with a fresh token: %v", err)
		}
		b.Value = []byte("v3")
		if err := mc.CompareAndSwap(b); !errors.Is(err, memcache.ErrCASConflict) {
			return fmt.Errorf("cas with a stale token: %v", err)
		}
		v, _ := getString(mc, p+"cas")
		return expect(v == "v2", "the conflicting cas stored %q", v)
	})

	check("incr/decr (floor at 0)", func() error {
		if err := mc.Set(&memcache.Item{Key: p + "n", Value: []byte("10")}); err != nil {
			return err
		}
		steps := []struct {
			incr  bool
			delta uint64
			want  uint64
		}{{true, 5, 15}, {false, 3, 12}, {false, 100, 0}, {true, 1, 1}}
		for _, s := range steps {
			var got uint64
			var err error
			if s.incr {
				got, err = mc.Increment(p+"n", s.delta)
			} else {
				got, err = mc.Decrement(p+"n", s.delta)
			}
			if err != nil || got != s.want {
				return fmt.Errorf("incr=%v %d: got %d, %v; want %d", s.incr, s.delta, got, err, s.want)
			}
		}
		_ = mc.Delete(p + "nx")
		_, err := mc.Increment(p+"nx", 1)
		return expect(errors.Is(err, memcache.ErrCacheMiss), "incr of a missing key: %v", err)
	})

	check("delete", func() error {
		_ = mc.Set(&memcache.Item{Key: p + "d", Value: []byte("x")})
		if err := mc.Delete(p + "d"); err != nil {
			return fmt.Errorf("delete of an existing key: %v", err)
		}
		if _, err := mc.Get(p + "d"); !errors.Is(err, memcache.ErrCacheMiss) {
			return fmt.Errorf("the key is still there: %v", err)
		}
		err := mc.Delete(p + "d")
		return expect(errors.Is(err, memcache.ErrCacheMiss), "delete of a missing key: %v", err)
	})

	check("100-key multi-get", func() error {
		keys := make([]string, 0, 101)
		for i := 0; i < 100; i++ {
			k := fmt.Sprintf("%sm%03d", p, i)
			keys = append(keys, k)
			if err := mc.Set(&memcache.Item{Key: k, Value: []byte(fmt.Sprintf("value-%d", i))}); err != nil {
				return err
			}
		}
		got, err := mc.GetMulti(append(keys, p+"m-missing"))
		if err != nil {
			return err
		}
		same := 0
		for i, k := range keys {
			if it, ok := got[k]; ok && string(it.Value) == fmt.Sprintf("value-%d", i) {
				same++
			}
		}
		return expect(same == 100 && len(got) == 100, "%d keys, %d equal", len(got), same)
	})

	check("500 KB value", func() error {
		v := make([]byte, 512000)
		if _, err := rand.Read(v); err != nil {
			return err
		}
		if err := mc.Set(&memcache.Item{Key: p + "big", Value: v}); err != nil {
			return err
		}
		it, err := mc.Get(p + "big")
		if err != nil {
			return err
		}
		return expect(bytes.Equal(it.Value, v), "the 500 KB value read back differs")
	})

	var ttlGone, touchKept bool
	ttlErr := func() error {
		if err := mc.Set(&memcache.Item{Key: p + "ttl", Value: []byte("short"), Expiration: 1}); err != nil {
			return err
		}
		if err := mc.Set(&memcache.Item{Key: p + "touch", Value: []byte("kept"), Expiration: 1}); err != nil {
			return err
		}
		if v, err := getString(mc, p+"ttl"); err != nil || v != "short" {
			return fmt.Errorf("the item is not there at once: %v", err)
		}
		if err := mc.Touch(p+"touch", 100); err != nil {
			return fmt.Errorf("touch: %v", err)
		}
		time.Sleep(2100 * time.Millisecond) // the 1 s TTL must pass on the server's clock
		_, err := mc.Get(p + "ttl")
		ttlGone = errors.Is(err, memcache.ErrCacheMiss)
		v, _ := getString(mc, p+"touch")
		touchKept = v == "kept"
		return nil
	}()
	check("TTL expiry", func() error {
		if ttlErr != nil {
			return ttlErr
		}
		return expect(ttlGone, "still there after its TTL")
	})
	check("touch extends the TTL", func() error {
		if ttlErr != nil {
			return ttlErr
		}
		return expect(touchKept, "touch did not extend the TTL")
	})

	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

func envOr(name, dflt string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return dflt
}

/*
 * access: what the meta protocol's h and l flags report, recent reads.
 *
 * memcached keeps, per item in memory, whether it was fetched since it
 * was stored and when it was last accessed. kura stores items on disk,
 * where writing on every read would cost a logged write per get, so it
 * keeps the same two facts in a fixed table in memory instead: one
 * 8-byte slot per key hash holding a 16-bit tag of the key, a fetched
 * bit and the last access time. A read or write of a key fills its slot;
 * a key whose slot another key took reports "not fetched" and the time
 * since its last write. Like memcached's, these facts are per server and
 * are lost at a restart; they are not replicated. Only the meta commands
 * note reads: for get and gets the table's cache miss per key measured a
 * fifth of the CPU a read costs (perf, 10-key multi-gets), so a key read
 * only by get reports "not fetched".
 *
 * Thread-safety: any thread; slots are read and written atomically.
 */
#ifndef KURA_ACCESS_H
#define KURA_ACCESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct access_table {
    _Atomic uint64_t *slots;
    size_t mask;
};

/* What a key's slot said before this access. */
struct access_seen {
    bool fetched;    /* read since it was last written */
    bool known;      /* the slot was this key's */
    uint32_t when_s; /* last read or write, unix seconds (when known) */
};

/*
 * Sets up a table of 2^`bits` slots (8 bytes each). Returns 0, or -1 when
 * out of memory.
 */
int access_init(struct access_table *t, unsigned bits);
void access_deinit(struct access_table *t);

/* Notes a read of `key` at `now_s`, returning what the slot held. */
void access_read(struct access_table *t, const void *key, size_t nkey,
                 uint32_t now_s, struct access_seen *seen);

/* Notes a write of `key` at `now_s`: not fetched since. */
void access_write(struct access_table *t, const void *key, size_t nkey,
                  uint32_t now_s);

/* What the slot holds, without noting an access (meta debug). */
void access_peek(struct access_table *t, const void *key, size_t nkey,
                 struct access_seen *seen);

#endif

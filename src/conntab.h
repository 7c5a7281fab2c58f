/*
 * conntab: the open sockets, for `stats conns`.
 *
 * memcached lists every socket it holds, listening and connected, with its
 * address, the local address it was accepted on, what it is doing and the
 * seconds since its last command. kura keeps the same facts in a table
 * indexed by descriptor: a connection takes its slot when it is created
 * and gives it back before its descriptor is closed, and updates its state
 * and the time of its last command with two relaxed atomic stores (no lock
 * on the request path). The addresses are read with getpeername(2) and
 * getsockname(2) when a slot is taken and when the table is listed.
 *
 * Thread-safety: any thread. Taking and giving back slots and listing the
 * table hold one mutex, so that a slot is never freed while it is listed;
 * a slot's state and time are atomics its connection writes.
 */
#ifndef KURA_CONNTAB_H
#define KURA_CONNTAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* memcached's state names for what a socket is doing. */
enum conntab_state {
    CONNTAB_LISTENING, /* conn_listening */
    CONNTAB_WAITING,   /* conn_waiting: idle */
    CONNTAB_READ,      /* conn_read: part of a command line has come */
    CONNTAB_PARSE,     /* conn_parse_cmd: running commands */
    CONNTAB_NREAD,     /* conn_nread: a data block is awaited */
    CONNTAB_MWRITE,    /* conn_mwrite: replies are being sent */
    CONNTAB_CLOSING,   /* conn_closing */
    CONNTAB_STATE_COUNT
};

struct conntab_slot {
    _Atomic uint8_t state;
    _Atomic uint32_t last_cmd_s; /* monotonic seconds */
    struct sockaddr_storage peer; /* the client's address (or ours) */
    socklen_t peer_len;
};

struct conntab {
    pthread_mutex_t lock;
    struct conntab_slot **slots; /* indexed by descriptor */
    size_t nslots;
};

/* Sets up a table for descriptors below `nfds`. Returns 0, or -1 when out
 * of memory. */
int conntab_init(struct conntab *t, size_t nfds);

/* Frees the table and every slot still taken. */
void conntab_deinit(struct conntab *t);

/*
 * Takes the slot of socket `fd` (listening or connected), at monotonic
 * second `now`. Returns the slot for conntab_note(), or NULL when `fd` is
 * past the table or memory is short (the socket is then not listed). `t`
 * may be NULL.
 */
struct conntab_slot *conntab_add(struct conntab *t, int fd, bool listening,
                                 uint32_t now);

/* Gives back the slot of `fd`; call before closing it. `t` may be NULL. */
void conntab_remove(struct conntab *t, int fd);

/* Records what a connection does; `now` is its last command's time, or 0
 * to leave that alone. `s` may be NULL. */
static inline void
conntab_note(struct conntab_slot *s, enum conntab_state state, uint32_t now)
{
    if (s == NULL) {
        return;
    }
    atomic_store_explicit(&s->state, (uint8_t)state, memory_order_relaxed);
    if (now != 0) {
        atomic_store_explicit(&s->last_cmd_s, now, memory_order_relaxed);
    }
}

/* Monotonic seconds, for conntab_add() and conntab_note(). */
uint32_t conntab_now(void);

/*
 * Lists the table in memcached's words, in descriptor order: for each
 * socket "<fd>:addr", "<fd>:listen_addr" (connected sockets),
 * "<fd>:state" and "<fd>:secs_since_last_cmd", each passed to
 * `emit(arg, name, value)`. Stops and returns false when `emit` does.
 */
bool conntab_list(struct conntab *t,
                  bool (*emit)(void *arg, const char *name,
                               const char *value),
                  void *arg);

#endif

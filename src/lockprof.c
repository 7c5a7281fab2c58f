/*
 * lockprof.c: a lock profiler linked into kurad only when configured with
 * --enable-lock-profile (off by default; never in a release build).
 *
 * It measures the serial sections: for every pthread mutex kura's own code
 * takes, how often it was taken, how often it was already held (a failed
 * trylock, or a lock that had to wait), the time spent waiting for it and
 * the time it was held; and the wall time of each call into Tokyo Cabinet
 * (tchdbput, tchdbget, tchdbget3, tchdbout), whose own method and record
 * locks are taken inside the library and held for the whole call.
 *
 * How: the linker's --wrap (see Makefile.am) sends kura's calls of
 * pthread_mutex_lock/trylock/unlock, pthread_cond_wait/timedwait and the
 * Tokyo Cabinet calls above to the __wrap_ functions here, which time them
 * with CLOCK_MONOTONIC (the vDSO's clock: no system call) and call the
 * real ones. No other code changes: the modules that own the locks (txn,
 * ulog, worker...) are the same source as in a release build. A mutex is
 * named by its address and by the code that locks it: up to 24 call
 * sites, each an offset into the executable with how many times it locked
 * the mutex (OFFSET:N; tools/lock-profile resolves them with addr2line).
 *
 * The figures are written when kurad exits, to the file named by the
 * environment variable KURA_LOCKPROF (nothing is written if it is unset),
 * one line per mutex and per Tokyo Cabinet call:
 *   mutex ADDR ACQUIRED CONTENDED WAIT_NS HOLD_NS MAX_HOLD_NS OFFSET:N...
 *   tc NAME CALLS WALL_NS MAX_NS
 *
 * This module is the one exception to "no hidden globals": a link-time
 * interposer receives only the arguments of the call it replaces, so its
 * tables are file-scope. A mutex handed to pthread_cond_wait counts as
 * released for the wait and taken again after it (the wait for the
 * condition is not lock wait). Each measurement costs two or three clock
 * reads (about 20-50 ns each on these machines), which lengthens every
 * hold a little: the hold times are upper bounds.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tcutil.h>
#include <tchdb.h>
#include <time.h>

#include "lockprof.h"

/* The code that takes a mutex: up to LOCKPROF_CALLERS distinct return
 * addresses per mutex, each with how often it took it. */
#define LOCKPROF_CALLERS 24
struct lockprof_caller {
    _Atomic uintptr_t ra;
    _Atomic uint64_t n;
};

/* One mutex's figures; key is its address, 0 while the slot is free. */
struct lockprof_entry {
    _Atomic uintptr_t key;
    struct lockprof_caller callers[LOCKPROF_CALLERS];
    _Atomic uint64_t acquired;
    _Atomic uint64_t contended;
    _Atomic uint64_t wait_ns;
    _Atomic uint64_t hold_ns;
    _Atomic uint64_t max_hold_ns;
};

/* 65,536 lock stripes and every other mutex fit with room to spare. */
#define LOCKPROF_SLOTS (1u << 17)
static struct lockprof_entry lockprof_table[LOCKPROF_SLOTS];

/* A mutex this thread holds, and since when. */
struct lockprof_held {
    const void *m;
    struct lockprof_entry *e;
    uint64_t since;
};

/* Per thread: the mutexes it holds, open-addressed by address. A worker
 * under -fsync always holds the stripes of every group waiting for its
 * sync, hundreds at 10,000 connections. */
#define LOCKPROF_HELD_SLOTS 16384u
static __thread struct lockprof_held *lockprof_held;

enum { TC_PUT, TC_GET, TC_GET3, TC_OUT, TC_CALLS };
static const char *const lockprof_tc_names[TC_CALLS] = {
    "tchdbput", "tchdbget", "tchdbget3", "tchdbout"};
static _Atomic uint64_t lockprof_tc_calls[TC_CALLS];
static _Atomic uint64_t lockprof_tc_ns[TC_CALLS];
static _Atomic uint64_t lockprof_tc_max[TC_CALLS];

/* The linker's names: __real_X is the library's X, __wrap_X replaces it. */
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                  const struct timespec *t);
bool __wrap_tchdbput(TCHDB *hdb, const void *k, int nk, const void *v, int nv);
void *__wrap_tchdbget(TCHDB *hdb, const void *k, int nk, int *sp);
int __wrap_tchdbget3(TCHDB *hdb, const void *k, int nk, void *v, int max);
bool __wrap_tchdbout(TCHDB *hdb, const void *k, int nk);
int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __real_pthread_mutex_trylock(pthread_mutex_t *m);
int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __real_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                  const struct timespec *t);
bool __real_tchdbput(TCHDB *hdb, const void *k, int nk, const void *v, int nv);
void *__real_tchdbget(TCHDB *hdb, const void *k, int nk, int *sp);
int __real_tchdbget3(TCHDB *hdb, const void *k, int nk, void *v, int max);
bool __real_tchdbout(TCHDB *hdb, const void *k, int nk);

static uint64_t lockprof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void lockprof_max(_Atomic uint64_t *max, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(max, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(
                          max, &cur, v, memory_order_relaxed,
                          memory_order_relaxed)) {
    }
}

static size_t lockprof_hash(const void *p, size_t slots)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(x >> 20) & (slots - 1);
}

/* Counts one acquisition of e by the code at return address ra. */
static void lockprof_count_caller(struct lockprof_entry *e, const void *ra)
{
    for (int i = 0; i < LOCKPROF_CALLERS; i++) {
        struct lockprof_caller *c = &e->callers[i];
        uintptr_t have = atomic_load_explicit(&c->ra, memory_order_relaxed);
        if (have == 0) {
            uintptr_t zero = 0;
            if (atomic_compare_exchange_strong(&c->ra, &zero, (uintptr_t)ra))
                have = (uintptr_t)ra;
            else
                have = zero;
        }
        if (have == (uintptr_t)ra) {
            atomic_fetch_add_explicit(&c->n, 1, memory_order_relaxed);
            return;
        }
    }
}

/* The entry of mutex m, made on first sight; NULL if the table is full:
 * that mutex then goes unmeasured. */
static struct lockprof_entry *lockprof_entry(const void *m)
{
    size_t i = lockprof_hash(m, LOCKPROF_SLOTS);
    for (size_t n = 0; n < LOCKPROF_SLOTS; n++) {
        struct lockprof_entry *e = &lockprof_table[i];
        uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == (uintptr_t)m)
            return e;
        if (k == 0) {
            uintptr_t zero = 0;
            if (atomic_compare_exchange_strong(&e->key, &zero, (uintptr_t)m))
                return e;
            if (zero == (uintptr_t)m)
                return e;
        }
        i = (i + 1) & (LOCKPROF_SLOTS - 1);
    }
    return NULL;
}

static struct lockprof_held *lockprof_slot(const void *m, int make)
{
    if (!lockprof_held) {
        if (!make)
            return NULL;
        lockprof_held = calloc(LOCKPROF_HELD_SLOTS, sizeof *lockprof_held);
        if (!lockprof_held)
            return NULL;
    }
    size_t i = lockprof_hash(m, LOCKPROF_HELD_SLOTS);
    for (size_t n = 0; n < LOCKPROF_HELD_SLOTS; n++) {
        struct lockprof_held *h = &lockprof_held[i];
        if (h->m == m || (make && h->m == NULL))
            return h;
        if (h->m == NULL && !make)
            return NULL;
        i = (i + 1) & (LOCKPROF_HELD_SLOTS - 1);
    }
    return NULL;
}

static void lockprof_taken(pthread_mutex_t *m, const void *caller, int waited,
                           uint64_t wait_ns, uint64_t now)
{
    struct lockprof_entry *e = lockprof_entry(m);
    if (!e)
        return;
    lockprof_count_caller(e, caller);
    atomic_fetch_add_explicit(&e->acquired, 1, memory_order_relaxed);
    if (waited) {
        atomic_fetch_add_explicit(&e->contended, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->wait_ns, wait_ns, memory_order_relaxed);
    }
    struct lockprof_held *h = lockprof_slot(m, 1);
    if (h) {
        h->m = m;
        h->e = e;
        h->since = now;
    }
}

static void lockprof_released(pthread_mutex_t *m)
{
    struct lockprof_held *h = lockprof_slot(m, 0);
    if (!h || h->m != m)
        return;
    uint64_t held = lockprof_now() - h->since;
    atomic_fetch_add_explicit(&h->e->hold_ns, held, memory_order_relaxed);
    lockprof_max(&h->e->max_hold_ns, held);
    /* Deleting from open addressing: re-place the entries after the hole. */
    size_t i = (size_t)(h - lockprof_held);
    h->m = NULL;
    for (size_t j = (i + 1) & (LOCKPROF_HELD_SLOTS - 1);
         lockprof_held[j].m != NULL; j = (j + 1) & (LOCKPROF_HELD_SLOTS - 1)) {
        struct lockprof_held moved = lockprof_held[j];
        lockprof_held[j].m = NULL;
        struct lockprof_held *to = lockprof_slot(moved.m, 1);
        if (to)
            *to = moved;
    }
}

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
    if (__real_pthread_mutex_trylock(m) == 0) {
        lockprof_taken(m, __builtin_return_address(0), 0, 0,
                       lockprof_now());
        return 0;
    }
    uint64_t t0 = lockprof_now();
    int rc = __real_pthread_mutex_lock(m);
    if (rc == 0) {
        uint64_t t1 = lockprof_now();
        lockprof_taken(m, __builtin_return_address(0), 1,
                       t1 - t0, t1);
    }
    return rc;
}

int __wrap_pthread_mutex_trylock(pthread_mutex_t *m)
{
    int rc = __real_pthread_mutex_trylock(m);
    const void *caller = __builtin_return_address(0);
    if (rc == 0) {
        lockprof_taken(m, caller, 0, 0, lockprof_now());
    } else {
        /* Found held: counted as contended, with no wait of its own. */
        struct lockprof_entry *e = lockprof_entry(m);
        (void)caller;
        if (e)
            atomic_fetch_add_explicit(&e->contended, 1, memory_order_relaxed);
    }
    return rc;
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
    lockprof_released(m);
    return __real_pthread_mutex_unlock(m);
}

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    lockprof_released(m);
    int rc = __real_pthread_cond_wait(c, m);
    lockprof_taken(m, __builtin_return_address(0), 0, 0,
                   lockprof_now());
    return rc;
}

int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                  const struct timespec *t)
{
    lockprof_released(m);
    int rc = __real_pthread_cond_timedwait(c, m, t);
    lockprof_taken(m, __builtin_return_address(0), 0, 0,
                   lockprof_now());
    return rc;
}

static void lockprof_tc(int which, uint64_t t0)
{
    uint64_t d = lockprof_now() - t0;
    atomic_fetch_add_explicit(&lockprof_tc_calls[which], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&lockprof_tc_ns[which], d, memory_order_relaxed);
    lockprof_max(&lockprof_tc_max[which], d);
}

bool __wrap_tchdbput(TCHDB *hdb, const void *k, int nk, const void *v, int nv)
{
    uint64_t t0 = lockprof_now();
    bool ok = __real_tchdbput(hdb, k, nk, v, nv);
    lockprof_tc(TC_PUT, t0);
    return ok;
}

void *__wrap_tchdbget(TCHDB *hdb, const void *k, int nk, int *sp)
{
    uint64_t t0 = lockprof_now();
    void *p = __real_tchdbget(hdb, k, nk, sp);
    lockprof_tc(TC_GET, t0);
    return p;
}

int __wrap_tchdbget3(TCHDB *hdb, const void *k, int nk, void *v, int max)
{
    uint64_t t0 = lockprof_now();
    int n = __real_tchdbget3(hdb, k, nk, v, max);
    lockprof_tc(TC_GET3, t0);
    return n;
}

bool __wrap_tchdbout(TCHDB *hdb, const void *k, int nk)
{
    uint64_t t0 = lockprof_now();
    bool ok = __real_tchdbout(hdb, k, nk);
    lockprof_tc(TC_OUT, t0);
    return ok;
}

void lockprof_write(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    /* Callers as offsets into the executable, for addr2line. */
    Dl_info info;
    uintptr_t base = 0;
    if (dladdr((void *)lockprof_write, &info) && info.dli_fbase)
        base = (uintptr_t)info.dli_fbase;
    for (size_t i = 0; i < LOCKPROF_SLOTS; i++) {
        struct lockprof_entry *e = &lockprof_table[i];
        uintptr_t k = atomic_load(&e->key);
        if (k == 0 || atomic_load(&e->acquired) == 0)
            continue;
        fprintf(f, "mutex %#lx %lu %lu %lu %lu %lu", (unsigned long)k,
                (unsigned long)atomic_load(&e->acquired),
                (unsigned long)atomic_load(&e->contended),
                (unsigned long)atomic_load(&e->wait_ns),
                (unsigned long)atomic_load(&e->hold_ns),
                (unsigned long)atomic_load(&e->max_hold_ns));
        for (int c = 0; c < LOCKPROF_CALLERS; c++) {
            uintptr_t ra = atomic_load(&e->callers[c].ra);
            if (ra)
                fprintf(f, " %#lx:%lu", (unsigned long)(ra - base),
                        (unsigned long)atomic_load(&e->callers[c].n));
        }
        fputc('\n', f);
    }
    for (int i = 0; i < TC_CALLS; i++)
        fprintf(f, "tc %s %lu %lu %lu\n", lockprof_tc_names[i],
                (unsigned long)atomic_load(&lockprof_tc_calls[i]),
                (unsigned long)atomic_load(&lockprof_tc_ns[i]),
                (unsigned long)atomic_load(&lockprof_tc_max[i]));
    fclose(f);
}

__attribute__((destructor)) static void lockprof_at_exit(void)
{
    const char *path = getenv("KURA_LOCKPROF");
    if (path && *path)
        lockprof_write(path);
}

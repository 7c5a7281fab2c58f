/*
 * store_internal: the store's state, shared by store.c (opening, records,
 * damage) and store_pages.c (how the file's pages are used) and by
 * nothing else.
 */
#ifndef KURA_STORE_INTERNAL_H
#define KURA_STORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <tchdb.h>
#include <tcutil.h>

#include "dbspec.h"
#include "log.h"
#include "store.h"

struct store {
    enum dbspec_kind kind;
    pthread_mutex_t iter_lock;
    pthread_mutex_t space_lock;      /* serialises fallocate() calls */
    _Atomic uint64_t space_end;      /* allocated up to here */
    _Atomic uint64_t space_reserved; /* outstanding reservations */
    _Atomic bool space_unsupported;  /* no fallocate: no guarantee */
    TCHDB *hdb; /* DBSPEC_HASH_FILE */
    TCMDB *mdb; /* DBSPEC_HASH_MEMORY */
    uint32_t salt; /* seals records (D3) */
    bool big_endian; /* the file's byte order (tcfile.h) */
    int lock_fd;   /* flock()ed `path`.lock, held while open */
    struct logger *log;        /* for damage found while serving */
    _Atomic uint64_t damage;   /* requests that met damage */
    _Atomic uint64_t damage_at; /* offset of the last damage found */
    char path[DBSPEC_PATH_MAX];
};

/* Tells the kernel how Tokyo Cabinet reads the file (store_pages.c);
 * once it is open. */
void store_pages_hint(struct store *s);

/* store_pages.c. D8: after a write the disk refused, the file is no
 * longer known to hold every write made in this boot; clears its boot
 * (best effort: the disk is failing) so the next start checks it in
 * full. */
void store_forget_boot(struct store *s);

#endif

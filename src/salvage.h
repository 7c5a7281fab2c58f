/*
 * salvage: rebuilds a hash database file from its intact records.
 *
 * After a power cut the database file is an arbitrary mix of old and new
 * pages, some torn, and its trees may link to records that never reached
 * the disk. Tokyo Cabinet cannot open such a file safely; this module
 * reads it directly (tcfile.h) and writes every intact record into a new
 * file, which then replaces the old one. `kura optimize` uses the same
 * rebuild, with new tuning, on a sound file.
 *
 * What "intact" means (store.h, D6):
 *   - A sealed record (record.h) is intact when its seal matches; a torn
 *     record never is. Such records are found wherever they start: the
 *     walk tries every aligned offset that an intact record does not
 *     cover, so a torn block or a garbage header costs only its own
 *     bytes. Sizes of free blocks and of torn records are never trusted:
 *     a header read from a torn page could otherwise make the walk jump
 *     over intact records.
 *   - A record written before seals existed is taken when its header,
 *     envelope and Tokyo Cabinet hash byte are all consistent with its
 *     key.
 *   - When one key is found more than once (an old copy whose release
 *     never reached the disk), the copy with the higher (stamp, server
 *     id) wins, the replication rule.
 * Records whose keys were changed after the last checkpoint are then
 * corrected by the redo of the update log (recovery.h): the log holds
 * every change made to the file since (D1), so whatever salvage keeps for
 * them is overwritten by their last logged state.
 *
 * The new file is written next to the old one (`path`.rebuild), with a
 * new salt (every record is sealed again), synced, marked clean, renamed
 * over the old one and the directory synced: a crash at any point leaves
 * either the old file or the new one. The new salt makes the old file's
 * records, whose blocks the file system frees and may hand back as
 * garbage inside this file after a later power cut, fail their seals.
 *
 * Single-threaded; runs before the database is opened.
 */
#ifndef KURA_SALVAGE_H
#define KURA_SALVAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tuning of the new file; a negative value keeps the old file's. */
struct salvage_tuning {
    int64_t bnum;
    int64_t apow;
    int64_t fpow;
    int opts;      /* Tokyo Cabinet HDBT* flags, or -1 */
    int64_t xmsiz; /* mapping used while writing; 0 = Tokyo Cabinet's */
    /* Walk the old file only up to here (0: all of it): past it, every
     * record belongs to a change the update log redoes (the checkpoint's
     * size, ulog.h), and what lies there after a power cut may be a
     * file system's garbage. */
    uint64_t end;
};

struct salvage_report {
    uint64_t kept;          /* records written to the new file */
    uint64_t superseded;    /* intact copies of a key that lost to another */
    uint64_t torn;          /* records whose seal did not match */
    uint64_t unreadable;    /* bytes in which no intact block was found */
    uint64_t first_damage;  /* offset of the first torn or unreadable byte */
    uint64_t old_size;
    uint64_t new_size;
};

/* Keeps the tuning of the old file (every field -1, xmsiz 0). */
void salvage_tuning_keep(struct salvage_tuning *t);

/*
 * Rebuilds the database file at `path` as described above and replaces
 * it. Returns 0, or -1 with a reason in `err` (`errlen` bytes); the old
 * file is then untouched.
 */
int salvage_rebuild(const char *path, const struct salvage_tuning *t,
                    struct salvage_report *r, char *err, size_t errlen);

#endif

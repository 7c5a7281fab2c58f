/*
 * atomicfile: small state files that are replaced, never rewritten.
 *
 * A reader sees either the old contents or the new, never a mix, even
 * after a crash or power loss at any instant:
 *   1. write the new contents to "<path>.tmp" and fsync it;
 *   2. rename() it over <path> (atomic within a directory);
 *   3. fsync the directory so the rename itself is durable.
 * Used for the flush point, checkpoints and replication timestamps.
 *
 * Thread-safety: concurrent writers of the same path must be serialised by
 * the caller (they would share the temp file).
 */
#ifndef KURA_ATOMICFILE_H
#define KURA_ATOMICFILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Atomically replaces `path` with `len` bytes of `data`.
 * Returns 0, or -1 with errno set (the old file is then intact).
 */
int atomicfile_write(const char *path, const void *data, size_t len);

/*
 * Reads up to `cap - 1` bytes of `path` into `buf` and NUL-terminates it.
 * Returns the number of bytes read, or -1 with errno set (ENOENT when the
 * file does not exist). A leftover "<path>.tmp" is ignored.
 */
long atomicfile_read(const char *path, char *buf, size_t cap);

/* fsyncs the directory containing `path`. Returns 0 or -1 with errno. */
int atomicfile_sync_dir(const char *path);

#endif

/*
 * lockfile: a file held with an exclusive flock() for as long as a
 * process uses what it guards (a database, an update log), holding the
 * holder's pid as text, so that whoever finds it taken can say by whom.
 * The flock is the lock; the pid is only a hint for messages.
 */
#ifndef KURA_LOCKFILE_H
#define KURA_LOCKFILE_H

/*
 * Opens (creating it, mode 0644) and locks `path` without waiting.
 * Returns the locked descriptor (the caller closes it to unlock), or -1
 * with errno set: EWOULDBLOCK when another process holds the lock, with
 * its pid in `*holder` (0 if the file names none); otherwise why `path`
 * could not be opened or locked.
 */
int lockfile_open(const char *path, long *holder);

/* Writes the calling process's pid into the locked file `fd` (after a
 * fork, the new process names itself). Returns 0, or -1 with errno. */
int lockfile_name_holder(int fd);

/* lockfile_open() and lockfile_name_holder() in one; a failure to write
 * the pid still leaves the file locked, since the pid is only a hint. */
int lockfile_take(const char *path, long *holder);

/*
 * Whether a live process holds `path`, asked with a shared lock on a
 * read-only descriptor (for readers that may not write the file).
 * Returns 1 with the holder's pid in `*holder` (0 if none is named), 0
 * if no process holds it or the file does not exist, or -1 with errno
 * set if it could not be asked.
 */
int lockfile_held(const char *path, long *holder);

#endif

/*
 * unit_tmpdir: the temporary directory a unit suite works in, made under
 * $TMPDIR (default /tmp) and removed with everything in it. One fixture
 * for every suite that touches files, so that none shells out to rm or
 * leaves a directory behind when a test passes.
 */
#ifndef KURA_UNIT_TMPDIR_H
#define KURA_UNIT_TMPDIR_H

#include <stddef.h>

#define UNIT_TMPDIR_MAX 256

/*
 * Makes a fresh directory named after `suite` in `dir` (`cap` bytes, at
 * least UNIT_TMPDIR_MAX) and returns `dir`. Fails the test if it cannot.
 */
char *unit_tmpdir_make(char *dir, size_t cap, const char *suite);

/* Removes `dir` and everything under it; fails the test if it cannot.
 * An empty `dir` (never made) is left alone. */
void unit_tmpdir_remove(const char *dir);

/* Writes "`dir`/`name`" into `out` (`cap` bytes); fails the test if it
 * does not fit. Returns `out`. */
char *unit_tmpdir_path(char *out, size_t cap, const char *dir,
                       const char *name);

#endif

/*
 * unit_tmpdir: the unit suites' temporary directory (unit_tmpdir.h).
 */

#include "unit_tmpdir.h"

#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *
unit_tmpdir_make(char *dir, size_t cap, const char *suite)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0') {
        base = "/tmp";
    }
    int n = snprintf(dir, cap, "%s/%s.XXXXXX", base, suite);
    ck_assert_msg(n > 0 && (size_t)n < cap, "temporary path too long");
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir,
                  strerror(errno));
    return dir;
}

static int
_remove_one(const char *path, const struct stat *sb, int type,
            struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

void
unit_tmpdir_remove(const char *dir)
{
    if (dir == NULL || dir[0] == '\0') {
        return;
    }
    ck_assert_msg(nftw(dir, _remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ||
                      errno == ENOENT,
                  "remove %s: %s", dir, strerror(errno));
}

char *
unit_tmpdir_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    ck_assert_msg(n > 0 && (size_t)n < cap, "path too long: %s/%s", dir,
                  name);
    return out;
}

/*
 * dbspec: the database name given on the command line.
 *
 * Parsed the way Tokyo Cabinet's abstract database reads it:
 *   path.tch#bnum=N#apow=N#fpow=N#opts=ldbt#rcnum=N#xmsiz=N#dfunit=N
 * or "*" for an in-memory hash (handy in tests; nothing survives a
 * restart). Numbers accept k/m/g suffixes. Unlike tcadbopen(), unknown or
 * malformed parameters are rejected with a message instead of being
 * ignored, so a typo in "#bnum" cannot silently leave the default.
 *
 * Pure; no allocation beyond the struct; any thread.
 */
#ifndef KURA_DBSPEC_H
#define KURA_DBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBSPEC_PATH_MAX 4096

enum dbspec_kind {
    DBSPEC_HASH_FILE,   /* a Tokyo Cabinet hash database file */
    DBSPEC_HASH_MEMORY, /* "*": an in-memory hash */
};

/* Tuning options; -1 (or 0 for opts) means "Tokyo Cabinet's default". */
struct dbspec {
    enum dbspec_kind kind;
    char path[DBSPEC_PATH_MAX];
    int64_t bnum;
    int64_t apow;
    int64_t fpow;
    uint8_t opts;   /* HDBTLARGE | HDBTDEFLATE | HDBTBZIP | HDBTTCBS */
    int64_t rcnum;
    int64_t xmsiz;
    int64_t dfunit;
};

/*
 * Parses `name` into `*spec`. Returns true on success. On failure returns
 * false and writes a one-line reason into `err` (`errlen` bytes).
 */
bool dbspec_parse(const char *name, struct dbspec *spec, char *err,
                  size_t errlen);

/*
 * Renders `spec` back into canonical "path#k=v..." form into `out`
 * (`outlen` bytes), e.g. for `stats settings`. Returns false if truncated.
 */
bool dbspec_format(const struct dbspec *spec, char *out, size_t outlen);

#endif

/*
 * replay_main: runs a fuzz harness over saved inputs, without libFuzzer.
 *
 *   replay_<target> PATH...
 *
 * Each PATH is a file or a directory of files (not recursive). Every input
 * is passed to LLVMFuzzerTestOneInput() once, in name order, after
 * LLVMFuzzerInitialize() if the harness has one. Linked with each harness
 * by the normal build, this turns the seed corpora into a regression test
 * that any compiler can run in `make check`. An invariant the harness
 * finds broken aborts, and so fails the test; so does a path that cannot
 * be read, or finding no input at all (a corpus that went missing).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct path_list {
    char **paths;
    size_t n;
    size_t cap;
};

static void
_die(const char *what, const char *path)
{
    fprintf(stderr, "replay: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void
_add(struct path_list *l, const char *dir, const char *name)
{
    if (l->n == l->cap) {
        l->cap = l->cap == 0 ? 64 : l->cap * 2;
        l->paths = realloc(l->paths, l->cap * sizeof(*l->paths));
        if (l->paths == NULL) {
            _die("out of memory for", name);
        }
    }
    size_t len = (dir != NULL ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *path = malloc(len);
    if (path == NULL) {
        _die("out of memory for", name);
    }
    if (dir != NULL) {
        snprintf(path, len, "%s/%s", dir, name);
    } else {
        snprintf(path, len, "%s", name);
    }
    l->paths[l->n++] = path;
}

static int
_cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the regular files of `dir` (closed again before any input runs, so
 * a harness that counts its descriptors sees the same set every time). */
static void
_add_dir(struct path_list *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        _die("cannot read", dir);
    }
    size_t first = l->n;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        _add(l, dir, e->d_name);
        struct stat st;
        if (stat(l->paths[l->n - 1], &st) != 0) {
            _die("cannot stat", l->paths[l->n - 1]);
        }
        if (!S_ISREG(st.st_mode)) {
            free(l->paths[--l->n]);
        }
    }
    closedir(d);
    qsort(l->paths + first, l->n - first, sizeof(*l->paths), _cmp_path);
}

static void
_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        _die("cannot open", path);
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        _die("cannot stat", path);
    }
    size_t size = (size_t)st.st_size;
    /* An exact-size copy, so reading past the input is caught by ASan. */
    uint8_t *data = malloc(size > 0 ? size : 1);
    if (data == NULL || fread(data, 1, size, f) != size) {
        _die("cannot read", path);
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
}

int
main(int argc, char **argv)
{
    struct path_list inputs = {0};

    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            _die("cannot stat", argv[i]);
        }
        if (S_ISDIR(st.st_mode)) {
            _add_dir(&inputs, argv[i]);
        } else {
            _add(&inputs, NULL, argv[i]);
        }
    }
    if (inputs.n == 0) {
        fprintf(stderr, "replay: no input in %d path(s)\n", argc - 1);
        return 1;
    }
    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    for (size_t i = 0; i < inputs.n; i++) {
        _run_file(inputs.paths[i]);
        free(inputs.paths[i]);
    }
    free(inputs.paths);
    printf("replay: %zu inputs passed\n", inputs.n);
    return 0;
}

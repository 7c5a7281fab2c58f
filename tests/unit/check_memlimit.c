/*
 * Unit tests for memlimit: the memory cgroup limit found as the kernel
 * applies it (cgroup v2: the lowest memory.max or memory.high up the
 * hierarchy; v1: hierarchical_memory_limit, else memory.limit_in_bytes),
 * inside a cgroup namespace too, none where there is no cgroup; the dirty
 * page cache charged to it; and the settings that follow.
 *
 * Each case builds a fake /proc/self and /sys/fs/cgroup under a temporary
 * root.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memlimit.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char root[UNIT_TMPDIR_MAX];

static void
_setup(void)
{
    unit_tmpdir_make(root, sizeof(root), "check_memlimit");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(root);
}

/* Writes `text` to `root``path`, making its directories. */
static void
_file(const char *path, const char *text)
{
    char full[512];
    snprintf(full, sizeof(full), "%s%s", root, path);
    for (char *p = full + strlen(root) + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            ck_assert(mkdir(full, 0755) == 0 || errno == EEXIST);
            *p = '/';
        }
    }
    FILE *f = fopen(full, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

#define V2_MOUNT "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
#define V1_MOUNT                                                             \
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"   \
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup "        \
    "rw,memory\n"

/* systemd's MemoryMax= on the unit, a lower one on its slice. */
START_TEST(test_v2_lowest_limit_up_the_tree)
{
    _file("/proc/self/mountinfo", "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
                                  V2_MOUNT);
    _file("/proc/self/cgroup", "0::/system.slice/kurad.service\n");
    _file("/sys/fs/cgroup/system.slice/kurad.service/cgroup.controllers",
          "cpu io memory pids\n");
    _file("/sys/fs/cgroup/system.slice/kurad.service/memory.max",
          "268435456\n");
    _file("/sys/fs/cgroup/system.slice/kurad.service/memory.high", "max\n");
    _file("/sys/fs/cgroup/system.slice/memory.max", "134217728\n");
    _file("/sys/fs/cgroup/memory.max", "max\n");
    struct memlimit m;
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 2);
    ck_assert_uint_eq(m.limit, 134217728);
    ck_assert(memlimit_limited(&m));
    ck_assert_uint_eq(memlimit_bytes(&m), 134217728);
    char want[256];
    snprintf(want, sizeof(want), "%s/sys/fs/cgroup/system.slice/"
             "kurad.service", root);
    ck_assert_str_eq(m.dir, want);
}
END_TEST

/* memory.high throttles before memory.max kills: it is the limit. */
START_TEST(test_v2_memory_high_counts)
{
    _file("/proc/self/mountinfo", V2_MOUNT);
    _file("/proc/self/cgroup", "0::/kura\n");
    _file("/sys/fs/cgroup/kura/cgroup.controllers", "memory\n");
    _file("/sys/fs/cgroup/kura/memory.max", "max\n");
    _file("/sys/fs/cgroup/kura/memory.high", "100000000\n");
    struct memlimit m;
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 2);
    ck_assert_uint_eq(m.limit, 100000000);
}
END_TEST

/* A container's cgroup namespace: the mount's root is the cgroup. */
START_TEST(test_v2_inside_a_namespace)
{
    _file("/proc/self/mountinfo",
          "41 31 0:38 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
    _file("/proc/self/cgroup", "0::/\n");
    _file("/sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
    _file("/sys/fs/cgroup/memory.max", "536870912\n");
    struct memlimit m;
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 2);
    ck_assert_uint_eq(m.limit, 536870912);
}
END_TEST

/* The unified hierarchy without the memory controller: v1 decides. */
START_TEST(test_v1_hierarchical_limit)
{
    _file("/proc/self/mountinfo",
          "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
          V1_MOUNT);
    _file("/proc/self/cgroup", "4:memory:/box/kura\n1:cpu:/\n0::/\n");
    _file("/sys/fs/cgroup/unified/cgroup.controllers", "");
    _file("/sys/fs/cgroup/memory/box/kura/memory.stat",
          "cache 100\nrss 5\nhierarchical_memory_limit 335544320\n"
          "total_dirty 4096\ntotal_writeback 8192\n");
    _file("/sys/fs/cgroup/memory/box/kura/memory.limit_in_bytes",
          "9223372036854771712\n");
    struct memlimit m;
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 1);
    ck_assert_uint_eq(m.limit, 335544320);
    uint64_t dirty;
    ck_assert_int_eq(memlimit_dirty(&m, &dirty), 0);
    ck_assert_uint_eq(dirty, 4096 + 8192);
}
END_TEST

START_TEST(test_v1_limit_in_bytes)
{
    _file("/proc/self/mountinfo", V1_MOUNT);
    _file("/proc/self/cgroup", "7:memory:/kura\n");
    _file("/sys/fs/cgroup/memory/kura/memory.stat", "cache 1\n");
    _file("/sys/fs/cgroup/memory/kura/memory.limit_in_bytes", "67108864\n");
    struct memlimit m;
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 1);
    ck_assert_uint_eq(m.limit, 67108864);
    uint64_t dirty;
    ck_assert_int_eq(memlimit_dirty(&m, &dirty), -1); /* no dirty line */
}
END_TEST

/* No cgroup at all (or no /proc): the machine's memory. */
START_TEST(test_no_cgroup)
{
    struct memlimit m;
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 0);
    ck_assert_uint_eq(m.limit, UINT64_MAX);
    ck_assert(!memlimit_limited(&m));
    ck_assert_uint_eq(memlimit_bytes(&m), m.ram);
    uint64_t dirty;
    ck_assert_int_eq(memlimit_dirty(&m, &dirty), -1);
    _file("/proc/self/mountinfo", "22 1 0:21 / / rw - ext4 /dev/vda rw\n");
    _file("/proc/self/cgroup", "0::/\n");
    memlimit_read(&m, root);
    ck_assert_int_eq(m.version, 0);
}
END_TEST

START_TEST(test_v2_dirty)
{
    _file("/proc/self/mountinfo", V2_MOUNT);
    _file("/proc/self/cgroup", "0::/k\n");
    _file("/sys/fs/cgroup/k/cgroup.controllers", "memory\n");
    _file("/sys/fs/cgroup/k/memory.max", "1000000\n");
    _file("/sys/fs/cgroup/k/memory.stat",
          "anon 1\nfile 2\nfile_dirty 40960\nfile_writeback 4096\n");
    struct memlimit m;
    memlimit_read(&m, root);
    uint64_t dirty;
    ck_assert_int_eq(memlimit_dirty(&m, &dirty), 0);
    ck_assert_uint_eq(dirty, 45056);
}
END_TEST

START_TEST(test_parsers)
{
    uint64_t v;
    ck_assert(memlimit_parse_value("max\n", &v));
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert(memlimit_parse_value("4096\n", &v));
    ck_assert_uint_eq(v, 4096);
    ck_assert(!memlimit_parse_value("-1\n", &v));
    ck_assert(!memlimit_parse_value("", &v));
    ck_assert(memlimit_stat_value("a 1\nab 2\nb 3", "ab", &v));
    ck_assert_uint_eq(v, 2);
    ck_assert(memlimit_stat_value("a 1\nab 2\nb 3", "b", &v));
    ck_assert_uint_eq(v, 3);
    ck_assert(!memlimit_stat_value("a 1\nab 2\n", "c", &v));
    ck_assert(!memlimit_stat_value("dirty x\n", "dirty", &v));
}
END_TEST

START_TEST(test_plan)
{
    struct memlimit m = {.ram = (uint64_t)24 << 30, .limit = UINT64_MAX};
    struct memplan p;
    memlimit_plan(&m, &p);
    ck_assert_int_eq(p.xmsiz, (int64_t)1 << 30); /* as before */
    ck_assert_uint_eq(p.dirty_max, 0);            /* the kernel's limits */
    ck_assert_uint_eq(p.writeback_at, 0);
    ck_assert_uint_eq(p.checkpoint_ms, 0); /* -ckpt decides */
    ck_assert_uint_eq(p.maxconn, 0);       /* -maxconn decides */
    ck_assert_uint_eq(p.checkpoint_log, 0);
    ck_assert_uint_eq(p.pin_max, (uint64_t)6 << 30);
    m.limit = (uint64_t)256 << 20;
    m.version = 1;
    memlimit_plan(&m, &p);
    ck_assert_int_eq(p.xmsiz, (int64_t)64 << 20);
    ck_assert_uint_eq(p.pin_max, (uint64_t)64 << 20);
    ck_assert_uint_eq(p.dirty_max, (uint64_t)32 << 20);
    ck_assert_uint_eq(p.writeback_at, (uint64_t)16 << 20);
    ck_assert_uint_eq(p.checkpoint_ms, 5000);
    ck_assert_uint_eq(p.maxconn, 4096);
    ck_assert_uint_eq(p.checkpoint_log, (uint64_t)64 << 20);
    m.limit = (uint64_t)32 << 20;
    memlimit_plan(&m, &p);
    ck_assert_uint_eq(p.dirty_max, (uint64_t)8 << 20);
}
END_TEST

static Suite *
memlimit_suite(void)
{
    Suite *s = suite_create("memlimit");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_v2_lowest_limit_up_the_tree);
    tcase_add_test(tc, test_v2_memory_high_counts);
    tcase_add_test(tc, test_v2_inside_a_namespace);
    tcase_add_test(tc, test_v1_hierarchical_limit);
    tcase_add_test(tc, test_v1_limit_in_bytes);
    tcase_add_test(tc, test_no_cgroup);
    tcase_add_test(tc, test_v2_dirty);
    tcase_add_test(tc, test_parsers);
    tcase_add_test(tc, test_plan);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(memlimit_suite)

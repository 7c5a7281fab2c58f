/*
 * Integration tests: what survives. Restart keeps values, flags and
 * expiry; kill -9 under a concurrent write load loses no acknowledged
 * write and needs no hand to restart; pid file rules; -kl; -dmn with
 * relative paths; a database that cannot be opened; SIGHUP; pages of
 * the database not in memory are read ahead of the requests that need
 * them (prefetch.h).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"
#include "tcfile.h"

static struct kura_proc k;
static char pid_path[600];
static char spec[600];

static void
_start_with_pid(void)
{
    kura_init(&k, NULL);
    snprintf(pid_path, sizeof(pid_path), "%s/kurad.pid", k.dir);
    k.args[k.nargs++] = "-pid";
    k.args[k.nargs++] = pid_path;
    ck_assert_int_eq(kura_launch(&k), 0);
}

static void
_cleanup(void)
{
    kura_cleanup(&k);
}

static bool
_file_exists(void *arg)
{
    return access(arg, F_OK) == 0;
}

START_TEST(test_restart_keeps_values_flags_expiry)
{
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd,
                       "set plain 0 0 5\r\nhello\r\n"
                       "set flagged 3735928559 0 3\r\nabc\r\n"
                       "set long 7 100000 4\r\nlong\r\n"
                       "set short 9 3 5\r\nshort\r\n",
                       "STORED\r\nSTORED\r\nSTORED\r\nSTORED\r\n"));
    close(fd);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "get plain flagged long short\r\n",
                       "VALUE plain 0 5\r\nhello\r\n"
                       "VALUE flagged 3735928559 3\r\nabc\r\n"
                       "VALUE long 7 4\r\nlong\r\n"
                       "VALUE short 9 5\r\nshort\r\nEND\r\n"));
    close(fd);
    /* The short expiry survived the restart too: it still runs out. */
    kura_kill9(&k);
    ck_assert_int_eq(kura_launch(&k), 0);
    fd = kc_connect(k.port);
    uint64_t deadline = harness_now_ms() + 6000;
    bool gone = false;
    char buf[256];
    while (!gone && harness_now_ms() < deadline) {
        kc_sends(fd, "get short\r\n");
        ck_assert_int_gt(kc_read_until(fd, buf, sizeof(buf), "END\r\n", 2000), 0);
        gone = strcmp(buf, "END\r\n") == 0;
    }
    ck_assert(gone);
    ck_assert(kc_check(fd, "get long\r\n", "VALUE long 7 4\r\nlong\r\nEND\r\n"));
    close(fd);
}
END_TEST

/* Writers record each set they saw acknowledged. */
#define WRITERS 8
#define MAX_ACKS 200000

struct writer {
    int id;
    int port;
    _Atomic long acked;  /* sets 0..acked-1 were acknowledged */
    _Atomic bool stop;
};

static void *
_write_loop(void *arg)
{
    struct writer *w = arg;
    char req[128];
    char reply[64];
    int fd = kc_connect(w->port);
    if (fd < 0) {
        return NULL;
    }
    for (long i = 0; i < MAX_ACKS && !atomic_load(&w->stop); i++) {
        /* Pipelined pairs exercise group commit as well. */
        snprintf(req, sizeof(req), "set w%d:%ld %ld 0 8\r\n%08ld\r\n", w->id,
                 i, i % 7, i);
        if (kc_sends(fd, req) != 0 ||
            kc_read_until(fd, reply, sizeof(reply), "\r\n", 5000) < 0 ||
            strcmp(reply, "STORED\r\n") != 0) {
            break;
        }
        atomic_store(&w->acked, i + 1);
    }
    close(fd);
    return NULL;
}

START_TEST(test_kill9_under_load_loses_no_acknowledged_write)
{
    static struct writer w[WRITERS];
    pthread_t th[WRITERS];

    for (int i = 0; i < WRITERS; i++) {
        w[i].id = i;
        w[i].port = k.port;
        atomic_store(&w[i].acked, 0);
        atomic_store(&w[i].stop, false);
        pthread_create(&th[i], NULL, _write_loop, &w[i]);
    }
    /* Let the load run, then kill the daemon in the middle of it. */
    uint64_t deadline = harness_now_ms() + 10000;
    long total = 0;
    while (harness_now_ms() < deadline && total < 5000) {
        total = 0;
        for (int i = 0; i < WRITERS; i++) {
            total += atomic_load(&w[i].acked);
        }
        usleep(1000);
    }
    ck_assert_int_ge(total, 5000);
    kill(k.pid, SIGKILL);
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
    }
    int status;
    waitpid(k.pid, &status, 0);
    k.pid = -1;
    /* The stale pid file is still there, and must not block a restart. */
    ck_assert(access(pid_path, F_OK) == 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    /* store.h D8: the machine kept running, so one pass checked it. */
    ck_assert(kura_log_has(&k, "(the machine did not restart, 1 pass)"));
    int fd = kc_connect(k.port);
    char req[64];
    char want[128];
    for (int i = 0; i < WRITERS; i++) {
        long n = atomic_load(&w[i].acked);
        for (long j = 0; j < n; j++) {
            snprintf(req, sizeof(req), "get w%d:%ld\r\n", i, j);
            snprintf(want, sizeof(want), "VALUE w%d:%ld %ld 8\r\n%08ld\r\nEND\r\n",
                     i, j, j % 7, j);
            ck_assert_msg(kc_check(fd, req, want), "lost acknowledged write %s",
                          req);
        }
    }
    close(fd);
}
END_TEST

/* Under -fsync always, a reply means its write was synced: one client
 * waiting for each reply in turn costs one fdatasync per set. */
START_TEST(test_each_acknowledged_set_was_synced)
{
    int fd = kc_connect(k.port);
    long long before = kc_stat(fd, "kura_ulog_syncs");
    ck_assert_int_ge(before, 0);
    long long took = kc_stat(fd, "kura_ulog_sync_us");
    ck_assert_int_ge(took, 0);
    for (int i = 0; i < 50; i++) {
        ck_assert(kc_check(fd, "set synced 0 0 1\r\nv\r\n", "STORED\r\n"));
    }
    ck_assert_int_ge(kc_stat(fd, "kura_ulog_syncs") - before, 50);
    ck_assert_int_ge(kc_stat(fd, "kura_ulog_sync_us"), took);
    close(fd);
}
END_TEST

START_TEST(test_second_instance_refused)
{
    char port[16];
    char err[4096];
    snprintf(port, sizeof(port), "%d", harness_free_port());
    const char *argv[] = {"kurad", "-port", port, "-pid", pid_path,
                          "*", NULL};
    int rc = harness_run(k.dir, argv, err, sizeof(err), 10000);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(err, "already running") != NULL, "stderr: %s", err);
    /* The first one is untouched. */
    int fd = kc_connect(k.port);
    ck_assert(kc_drain(fd, "version\r\n", "\r\n"));
    close(fd);
}
END_TEST

/* Without a pid file, the database's own lock refuses a second kurad on
 * it, and the message names the process that holds it. */
START_TEST(test_second_instance_on_a_database_names_its_holder)
{
    char port[16];
    char err[4096];
    char want[64];
    snprintf(port, sizeof(port), "%d", harness_free_port());
    const char *argv[] = {"kurad", "-port", port, k.db, NULL};
    int rc = harness_run(k.dir, argv, err, sizeof(err), 10000);
    ck_assert_int_ne(rc, 0);
    snprintf(want, sizeof(want), "process %ld is using it", (long)k.pid);
    ck_assert_msg(strstr(err, want) != NULL, "stderr: %s", err);
    int fd = kc_connect(k.port);
    ck_assert(kc_drain(fd, "version\r\n", "\r\n"));
    close(fd);
}
END_TEST

START_TEST(test_kl_replaces_running_instance)
{
    struct kura_proc second;
    const char *args[] = {"-pid", pid_path, "-kl", k.db, NULL};
    pid_t first = k.pid;
    int status;

    kura_init(&second, args);
    ck_assert_int_eq(kura_launch(&second), 0);
    /* The first instance was asked to stop and did so cleanly. */
    ck_assert_int_eq(waitpid(first, &status, 0), first);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    k.pid = -1;
    int fd = kc_connect(second.port);
    ck_assert(kc_drain(fd, "version\r\n", "\r\n"));
    close(fd);
    kura_cleanup(&second);
}
END_TEST

START_TEST(test_sighup_reopens_log)
{
    char moved[700];
    snprintf(moved, sizeof(moved), "%s.1", k.log);
    ck_assert_int_eq(rename(k.log, moved), 0);
    kill(k.pid, SIGHUP);
    ck_assert(harness_wait_for(_file_exists, k.log, 5000));
    int fd = kc_connect(k.port);
    ck_assert(kc_drain(fd, "version\r\n", "\r\n"));
    close(fd);
}
END_TEST

START_TEST(test_repeated_sigterm_still_stops_cleanly)
{
    /* Enough data that the final checkpoint and close take a while. */
    int fd = kc_connect(k.port);
    char cmd[128];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(cmd, sizeof(cmd),
                         "set rs%d 0 0 10 noreply\r\n0123456789\r\n", i);
        ck_assert_int_eq(kc_send(fd, cmd, (size_t)n), 0);
    }
    ck_assert(kc_drain(fd, "version\r\n", "\r\n"));
    close(fd);
    /* SIGTERM after SIGTERM, as an impatient operator or a supervisor
     * sends them, until kurad is gone: it must still exit 0, its close
     * finished (a second signal used to kill it half-way). */
    pid_t pid = k.pid;
    int status = 0;
    uint64_t deadline = harness_now_ms() + 20000;
    pid_t r = 0;
    while (r != pid && harness_now_ms() < deadline) {
        kill(pid, SIGTERM);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL); /* the spacing between signals, not a wait */
        r = waitpid(pid, &status, WNOHANG);
    }
    ck_assert_int_eq(r, pid);
    k.pid = -1;
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "kurad ended with status %d", status);
    ck_assert(kura_log_has(&k, "kurad stopped"));
    ck_assert_int_eq(kura_launch(&k), 0);
}
END_TEST

START_TEST(test_flush_survives_restart)
{
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set a 0 0 1\r\nx\r\nflush_all\r\nset b 0 0 1\r\ny\r\n",
                       "STORED\r\nOK\r\nSTORED\r\n"));
    close(fd);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "get a b\r\n", "VALUE b 0 1\r\ny\r\nEND\r\n"));
    close(fd);
}
END_TEST

/* curr_items counts values, as memcached's does: a delete's tombstone
 * (kept for replication, T6) is a record of the file (kura_db_records)
 * but no item, before and after a clean restart and a kill -9. */
START_TEST(test_curr_items_leaves_out_tombstones)
{
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd,
                       "set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\n"
                       "set c 0 0 1\r\nz\r\ndelete b\r\nset a 0 0 2\r\nxx\r\n"
                       "delete nothere\r\n",
                       "STORED\r\nSTORED\r\nSTORED\r\nDELETED\r\nSTORED\r\n"
                       "NOT_FOUND\r\n"));
    ck_assert_int_eq(kc_stat(fd, "curr_items"), 2);
    close(fd);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "curr_items"), 2);
    ck_assert(kc_check(fd, "set b 0 0 1\r\nq\r\ndelete c\r\n",
                       "STORED\r\nDELETED\r\n"));
    close(fd);
    kura_kill9(&k); /* the log's redo applies the last two again */
    ck_assert_int_eq(kura_launch(&k), 0);
    fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "curr_items"), 2);
    close(fd);
}
END_TEST

static bool
_pid_gone(void *arg)
{
    pid_t pid = *(pid_t *)arg;
    return kill(pid, 0) != 0 && errno == ESRCH;
}

START_TEST(test_dmn_keeps_relative_paths)
{
    struct kura_proc d;
    char port[16];
    char err[4096];
    char path[700];

    kura_init(&d, NULL);
    snprintf(port, sizeof(port), "%d", d.port);
    const char *argv[] = {"kurad", "-port", port, "-dmn", "-pid", "run.pid",
                          "-log", "logs.txt", "db/rel.tch", NULL};
    snprintf(path, sizeof(path), "%s/db", d.dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    /* The starting process returns once the daemon is serving. */
    ck_assert_int_eq(harness_run(d.dir, argv, err, sizeof(err), 15000), 0);
    int fd = kc_connect(d.port);
    ck_assert_int_ge(fd, 0);
    ck_assert(kc_check(fd, "set r 0 0 1\r\nr\r\n", "STORED\r\n"));
    close(fd);
    snprintf(path, sizeof(path), "%s/db/rel.tch", d.dir);
    ck_assert(access(path, F_OK) == 0);
    snprintf(path, sizeof(path), "%s/logs.txt", d.dir);
    ck_assert(access(path, F_OK) == 0);
    snprintf(path, sizeof(path), "%s/run.pid", d.dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long pid = 0;
    ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    pid_t p = (pid_t)pid;
    ck_assert_int_eq(kill(p, SIGTERM), 0);
    ck_assert(harness_wait_for(_pid_gone, &p, 10000));
    /* A clean stop removes the pid file. */
    ck_assert(access(path, F_OK) != 0);
    kura_cleanup(&d);
}
END_TEST

START_TEST(test_unopenable_database)
{
    char err[4096];
    char port[16];
    char path[700];
    snprintf(port, sizeof(port), "%d", harness_free_port());

    const char *missing_dir[] = {"kurad", "-port", port,
                                 "/nonexistent/dir/k.tch", NULL};
    int rc = harness_run(NULL, missing_dir, err, sizeof(err), 10000);
    ck_assert_int_ne(rc, 0);
    /* Named as given, not as the update log derived from it. */
    ck_assert_msg(strstr(err, "cannot open database /nonexistent/dir/k.tch: "
                              "directory /nonexistent/dir: No such file or "
                              "directory") != NULL &&
                  strstr(err, ".ulog") == NULL, "%s", err);

    snprintf(path, sizeof(path), "%s/garbage.tch", k.dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 1000; i++) {
        fputs("this is not a tokyo cabinet file\n", f);
    }
    fclose(f);
    const char *garbage[] = {"kurad", "-port", port, path, NULL};
    rc = harness_run(NULL, garbage, err, sizeof(err), 10000);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(err, "is damaged at offset 0: not a Tokyo Cabinet "
                              "database") != NULL, "%s", err);

    /* A real database, cut short after a clean stop. */
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set a 0 0 1\r\nx\r\n", "STORED\r\n"));
    close(fd);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    struct stat st;
    ck_assert_int_eq(stat(k.db, &st), 0);
    ck_assert_int_eq(truncate(k.db, st.st_size / 2), 0);
    const char *cut[] = {"kurad", "-port", port, k.db, NULL};
    rc = harness_run(NULL, cut, err, sizeof(err), 10000);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "(truncated?)") != NULL &&
                  strstr(err, "full resync") != NULL, "%s", err);
}
END_TEST

/* A bad flag: its one line and where the flags are listed, not the
 * usage that would bury it. */
START_TEST(test_bad_flag_exits_with_its_reason_alone)
{
    char err[4096];
    const char *argv[] = {"kurad", "-thnum", "zero", NULL};
    ck_assert_int_eq(harness_run(NULL, argv, err, sizeof(err), 10000), 2);
    ck_assert_msg(strstr(err, "-thnum") != NULL &&
                  strstr(err, "kurad -h") != NULL &&
                  strstr(err, "usage") == NULL &&
                  strchr(err, '\n') == err + strlen(err) - 1, "%s", err);
    const char *unknown[] = {"kurad", "-bogus", NULL};
    ck_assert_int_eq(harness_run(NULL, unknown, err, sizeof(err), 10000), 2);
    ck_assert_str_eq(err, "kurad: unknown option -bogus (see -h)\n");
}
END_TEST

/* -dmn with its log on standard error: a failed start says why once. */
START_TEST(test_daemon_start_failure_said_once)
{
    char err[4096];
    char port[16];
    snprintf(port, sizeof(port), "%d", harness_free_port());
    const char *argv[] = {"kurad", "-port", port, "-dmn", "-pid",
                          "other.pid", k.db, NULL};
    ck_assert_int_eq(harness_run(k.dir, argv, err, sizeof(err), 15000), 1);
    /* One line says it; only warnings may come besides. */
    int said = 0;
    for (char *line = strtok(err, "\n"); line != NULL;
         line = strtok(NULL, "\n")) {
        said += strstr(line, " WARN ") == NULL;
    }
    ck_assert_int_eq(said, 1);
}
END_TEST

/* A second kurad on a port in use fails before it creates any file. */
START_TEST(test_port_in_use_creates_nothing)
{
    char err[4096];
    char port[16];
    char dir[700];
    char db[760];
    snprintf(port, sizeof(port), "%d", k.port);
    snprintf(dir, sizeof(dir), "%s/second", k.dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(db, sizeof(db), "%s/b.tch", dir);
    const char *argv[] = {"kurad", "-port", port, db, NULL};
    ck_assert_int_eq(harness_run(NULL, argv, err, sizeof(err), 10000), 1);
    ck_assert_msg(strstr(err, "Address already in use") != NULL, "%s", err);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        ck_assert_msg(e->d_name[0] == '.', "created %s", e->d_name);
    }
    closedir(d);
}
END_TEST

/* Where key `key`'s record lies in the database file. */
static uint64_t
_record_of(const char *key, uint64_t *after_hash)
{
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, k.db, why, sizeof(why)), TCFILE_OK);
    uint64_t off = 0;
    const char *w;
    ck_assert_int_eq(tcfile_find(&f, (const uint8_t *)key, strlen(key), &off,
                                 &w),
                     1);
    *after_hash = 2 + 2 * (uint64_t)f.width + 2; /* magic, hash, links, pad */
    tcfile_close(&f);
    return off;
}

/*
 * A page of the database going bad under a running server (store.h,
 * damage while serving): the request that meets it gets SERVER_ERROR,
 * the damage is logged with its offset, every other key keeps being
 * served, and the next start checks the file and rebuilds it.
 */
START_TEST(test_damage_while_serving)
{
    char req[128];
    char expect[128];
    /* The call the guard abandons leaves Tokyo Cabinet's allocation of
     * that call behind (store.h): LeakSanitizer is told, for this server
     * only. */
    char supp[600];
    char lsan[700];
    snprintf(supp, sizeof(supp), "%s/lsan.supp", k.dir);
    FILE *sf = fopen(supp, "w");
    ck_assert_ptr_nonnull(sf);
    fputs("leak:libtokyocabinet\n", sf);
    fclose(sf);
    snprintf(lsan, sizeof(lsan), "suppressions=%s:print_suppressions=0",
             supp);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    setenv("LSAN_OPTIONS", lsan, 1);
    ck_assert_int_eq(kura_launch(&k), 0);
    int fd = kc_connect(k.port);
    for (int i = 0; i < 500; i++) {
        snprintf(req, sizeof(req), "set d%d 0 0 6\r\nval%03d\r\n", i, i);
        ck_assert(kc_check(fd, req, "STORED\r\n"));
    }
    /* A key size that Tokyo Cabinet would turn into a failed allocation,
     * and so into exit(1), written into the page kurad has mapped. */
    uint64_t hdr;
    uint64_t off = _record_of("d123", &hdr);
    static const uint8_t huge[5] = {0x80, 0x80, 0x80, 0x80, 0x0f};
    int dfd = open(k.db, O_WRONLY);
    ck_assert_int_ge(dfd, 0);
    ck_assert_int_eq(pwrite(dfd, huge, sizeof(huge), (off_t)(off + hdr)), 5);
    close(dfd);
    ck_assert(kc_check(fd, "get d123\r\n", "SERVER_ERROR read failed\r\n"));
    snprintf(expect, sizeof(expect), "damaged at offset %llu",
             (unsigned long long)off);
    ck_assert(kura_wait_logged(&k, expect, 5000));
    for (int i = 0; i < 500; i += 7) {
        if (i == 123) {
            continue;
        }
        snprintf(req, sizeof(req), "get d%d\r\n", i);
        snprintf(expect, sizeof(expect), "VALUE d%d 0 6\r\nval%03d\r\nEND"
                 "\r\n", i, i);
        ck_assert(kc_check(fd, req, expect));
    }
    ck_assert(kc_check(fd, "set fresh 0 0 1\r\nx\r\n", "STORED\r\n"));
    /* The get met it; the expiry sweeper's walk may have met it too,
     * without finding where, which must not lose the offset. */
    ck_assert_int_ge(kc_stat(fd, "kura_db_damage_seen"), 1);
    ck_assert_int_eq(kc_stat(fd, "kura_db_damage_offset"), (long long)off);
    close(fd);
    /* A clean stop leaves the file unmarked: the next start rebuilds it. */
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    ck_assert(kura_log_has(&k, "rebuilt from its intact records"));
    fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "get d124 fresh\r\n", "VALUE d124 0 6\r\nval124"
                       "\r\nVALUE fresh 0 1\r\nx\r\nEND\r\n"));
    close(fd);
}
END_TEST

/* Puts the database file's records out of memory; false if the kernel
 * kept them (the header and bucket array stay: kurad maps and locks
 * them). */
static bool
_evict_db(const char *path)
{
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    size_t first = (size_t)(f.frec / 4096 + 1);
    tcfile_close(&f);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    size_t pages = ((size_t)st.st_size + 4095) / 4096;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert(map != MAP_FAILED);
    unsigned char *vec = malloc(pages);
    ck_assert_int_eq(mincore(map, (size_t)st.st_size, vec), 0);
    size_t resident = 0;
    for (size_t i = first; i < pages; i++) {
        resident += vec[i] & 1;
    }
    free(vec);
    munmap(map, (size_t)st.st_size);
    close(fd);
    return resident * 10 < pages - first; /* a few may come back at once */
}

/* A request whose record is not in memory waits while its pages are read
 * ahead, and then gets the value; stats counts it. Tokyo Cabinet maps
 * only its bucket array here (#xmsiz=0), so the records can be put out. */
START_TEST(test_missing_pages_are_read_ahead)
{
    kura_init(&k, NULL);
    snprintf(spec, sizeof(spec), "%s#xmsiz=0", k.db);
    k.args[k.nargs++] = spec;
    k.own_db = false;
    ck_assert_int_eq(kura_launch(&k), 0);
    int fd = kc_connect(k.port);
    char value[3001];
    memset(value, 'v', 3000);
    value[3000] = '\0';
    for (int i = 0; i < 300; i++) {
        char req[3100];
        snprintf(req, sizeof(req), "set ra%d 0 0 3000\r\n%s\r\n", i, value);
        ck_assert(kc_check(fd, req, "STORED\r\n"));
    }
    close(fd);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    if (!_evict_db(k.db)) {
        printf("check_it_persistence: the file system kept the pages; "
               "read-ahead not checked\n");
        return;
    }
    fd = kc_connect(k.port);
    for (int i = 0; i < 300; i++) {
        char req[64];
        char expect[3100];
        snprintf(req, sizeof(req), "get ra%d\r\n", i);
        snprintf(expect, sizeof(expect), "VALUE ra%d 0 3000\r\n%s\r\nEND\r\n",
                 i, value);
        ck_assert(kc_check(fd, req, expect));
    }
    ck_assert_int_gt(kc_stat(fd, "kura_prefetch_waits"), 0);
    ck_assert_int_gt(kc_stat(fd, "kura_prefetch_reads"), 0);
    close(fd);
}
END_TEST

static Suite *
persistence_suite(void)
{
    Suite *s = suite_create("it_persistence");
    TCase *tc = tcase_create("restart");
    tcase_add_checked_fixture(tc, _start_with_pid, _cleanup);
    tcase_add_test(tc, test_restart_keeps_values_flags_expiry);
    tcase_add_test(tc, test_kill9_under_load_loses_no_acknowledged_write);
    tcase_add_test(tc, test_flush_survives_restart);
    tcase_add_test(tc, test_curr_items_leaves_out_tombstones);
    tcase_add_test(tc, test_each_acknowledged_set_was_synced);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tc = tcase_create("process");
    tcase_add_checked_fixture(tc, _start_with_pid, _cleanup);
    tcase_add_test(tc, test_second_instance_refused);
    tcase_add_test(tc, test_second_instance_on_a_database_names_its_holder);
    tcase_add_test(tc, test_kl_replaces_running_instance);
    tcase_add_test(tc, test_sighup_reopens_log);
    tcase_add_test(tc, test_dmn_keeps_relative_paths);
    tcase_add_test(tc, test_unopenable_database);
    tcase_add_test(tc, test_damage_while_serving);
    tcase_add_test(tc, test_bad_flag_exits_with_its_reason_alone);
    tcase_add_test(tc, test_port_in_use_creates_nothing);
    tcase_add_test(tc, test_daemon_start_failure_said_once);
    tcase_add_test(tc, test_repeated_sigterm_still_stops_cleanly);
    tcase_add_test(tc, test_missing_pages_are_read_ahead);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(persistence_suite)

/*
 * with_kurad: runs a command against a freshly started kurad.
 *
 *   with_kurad [--kurad-arg ARG]... COMMAND [ARGS...]
 *
 * Starts kurad on a free loopback port with a temporary data directory,
 * exports KURA_HOST, KURA_PORT and KURA_DATA, runs COMMAND, then stops the
 * daemon with SIGTERM. The exit status is COMMAND's, or 99 (a hard error
 * for the automake test driver) if kurad failed to start or to stop
 * cleanly. Client tests in Python, Perl and shell run under it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int
main(int argc, char **argv)
{
    const char *extra[HARNESS_MAX_ARGS + 1];
    int nextra = 0;
    int i = 1;
    struct kura_proc k;
    char port[16];
    int status;

    while (i + 1 < argc && strcmp(argv[i], "--kurad-arg") == 0) {
        if (nextra < HARNESS_MAX_ARGS) {
            extra[nextra++] = argv[i + 1];
        }
        i += 2;
    }
    extra[nextra] = NULL;
    if (i >= argc) {
        fprintf(stderr, "usage: with_kurad [--kurad-arg ARG]... COMMAND...\n");
        return 99;
    }
    kura_init(&k, extra);
    if (kura_launch(&k) != 0) {
        kura_cleanup(&k);
        return 99;
    }
    snprintf(port, sizeof(port), "%d", k.port);
    setenv("KURA_HOST", "127.0.0.1", 1);
    setenv("KURA_PORT", port, 1);
    setenv("KURA_DATA", k.dir, 1);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execvp(argv[i], argv + i);
        perror(argv[i]);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 99;
    int stop = kura_stop(&k, 30000);
    if (stop != 0) {
        fprintf(stderr, "with_kurad: kurad exited with %d on SIGTERM; log:\n",
                stop);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "cat '%s' >&2", k.log);
        if (system(cmd) != 0) {
            fprintf(stderr, "(no log)\n");
        }
        rc = 99;
    }
    kura_cleanup(&k);
    return rc;
}

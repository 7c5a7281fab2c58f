/*
 * server: assembles the daemon from its modules and runs it.
 *
 * Start-up order (each step can fail with a clear message and a non-zero
 * exit, before anything is served): log, -kl, pid file, daemonise, file
 * limit, database, write path, workers, listener, sweeper, signals. Shut
 * down in reverse on SIGTERM/SIGINT: stop accepting, let every worker
 * finish its pass (commit, send), close connections, stop the sweeper,
 * sync and close the database, remove the pid file. SIGHUP reopens the log.
 *
 * Thread-safety: server_run() is called once, from main().
 */
#ifndef KURA_SERVER_H
#define KURA_SERVER_H

#include "settings.h"

/* Runs the daemon until it is told to stop. Returns the exit status. */
int server_run(const struct settings *settings);

#endif

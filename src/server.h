/*
 * server: assembles the daemon from its modules and runs it.
 *
 * Start-up order (each step can fail with a clear message and a non-zero
 * exit, before anything is served): log, -kl, pid file, daemonise, file
 * limit, client passwords, update log, database, redo of the log, write
 * path, replication (master side, then the receiver's setup), log threads,
 * workers, sweeper, the receiver's thread, signals; then the listener, at
 * once or, with -mhost, once the receiver has caught up with a reachable
 * master or -catchup has passed (the event loop runs meanwhile, so a
 * signal stops a server still catching up). -dmn's parent and systemd
 * hear "ready" when the listener opens. Shut down in reverse on
 * SIGTERM/SIGINT: stop accepting, let every worker finish its pass
 * (commit, send), close connections, stop replication and the sweeper,
 * sync and close the log and the database, remove the pid file. SIGHUP
 * reopens the log and reloads the TLS material (tlsconf.h). The TLS
 * contexts are made right after the client passwords are read; the TLS
 * port (-tlsport) is a second listener beside the plaintext one.
 *
 * Thread-safety: server_run() is called once, from main().
 */
#ifndef KURA_SERVER_H
#define KURA_SERVER_H

#include "settings.h"

/* Runs the daemon until it is told to stop. Returns the exit status. */
int server_run(const struct settings *settings);

#endif

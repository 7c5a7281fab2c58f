/*
 * ulog_cmd: the `kura ulog` subcommand (see ulog_cmd.c).
 */
#ifndef KURA_ULOG_CMD_H
#define KURA_ULOG_CMD_H

/* Runs `kura ulog ...`; argv[0] is "ulog". Returns the exit status. */
int ulog_cmd(int argc, char **argv);

#endif

/*
 * stats_cmd: `kura stats`, kurad's `stats` as STAT lines or in Prometheus'
 * text format (see stats_cmd.c). Exit statuses:
 */
#ifndef KURA_TOOLS_STATS_CMD_H
#define KURA_TOOLS_STATS_CMD_H

enum stats_cmd_status {
    STATS_CMD_OK = 0,    /* the stats were printed */
    STATS_CMD_FAILED = 1, /* no stats: no answer, refused or masked (with
                           * --prometheus, kura_up 0 was printed) */
    STATS_CMD_USAGE = 2, /* bad options or an unreadable --auth file */
};

/* `kura stats` with its arguments (argv[0] is "stats"); returns the exit
 * status above. */
int stats_cmd(int argc, char **argv);

#endif

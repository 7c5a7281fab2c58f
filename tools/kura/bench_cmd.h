/*
 * bench_cmd: `kura bench` (see bench_cmd.c).
 */
#ifndef KURA_TOOLS_BENCH_CMD_H
#define KURA_TOOLS_BENCH_CMD_H

/*
 * `kura bench` with its arguments (argv[0] is "bench"): runs the load and
 * prints ops/s and latency percentiles (one JSON object with --json).
 * Returns the exit status: 0 no errors, 1 errors or failure to run, 2
 * bad options.
 */
int bench_cmd(int argc, char **argv);

#endif

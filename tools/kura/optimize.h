/*
 * optimize: `kura optimize DBNAME`, rebuilding a stopped database with new
 * tuning (see optimize.c).
 */
#ifndef KURA_OPTIMIZE_H
#define KURA_OPTIMIZE_H

/*
 * Runs `kura optimize` with its arguments (`argv[0]` is "optimize").
 * Returns the exit status: 0 done, 1 failed, 2 usage.
 */
int optimize_cmd(int argc, char **argv);

#endif

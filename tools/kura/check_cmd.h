/*
 * check_cmd: `kura check DBNAME` (see check_cmd.c).
 */
#ifndef KURA_TOOLS_CHECK_CMD_H
#define KURA_TOOLS_CHECK_CMD_H

/*
 * `kura check` with its arguments (argv[0] is "check"). Prints the record
 * count and "sound", or where the file is damaged. Returns the exit
 * status: 0 sound, 1 damaged, missing or unreadable, 2 usage.
 */
int check_cmd(int argc, char **argv);

#endif

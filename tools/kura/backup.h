/*
 * backup: `kura backup`, a consistent copy of a running server's database,
 * taken over its replication port (see backup.c and doc/backup.md).
 */
#ifndef KURA_BACKUP_H
#define KURA_BACKUP_H

/*
 * Runs `kura backup --port P [--host H] [--rkey FILE] [--timeout MS]
 * OUT.tch[#tuning]`; argv[0] is "backup". Writes OUT.tch and OUT.tch.pos
 * (backup_pos.h), and OUT.tch.flush when the server had a flush_all in
 * the copied part of its log. Returns the exit status: 0 done, 1 the
 * backup failed (nothing of it is left under OUT's names), 2 usage.
 */
int backup_cmd(int argc, char **argv);

#endif

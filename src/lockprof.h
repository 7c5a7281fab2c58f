/*
 * lockprof.h: the lock profiler of a --enable-lock-profile build
 * (lockprof.c says what it measures and how). Nothing calls into it in
 * normal operation: the linker routes kura's mutex and Tokyo Cabinet calls
 * through it, and it writes its figures when kurad exits.
 */
#ifndef KURA_LOCKPROF_H
#define KURA_LOCKPROF_H

/* Writes every mutex's and every Tokyo Cabinet call's figures so far to
 * the file at path (replaced), in the format lockprof.c describes. Does
 * nothing if the file cannot be opened. Called at exit with the path in
 * KURA_LOCKPROF; safe to call at any time (the figures are read without
 * stopping the threads that add to them). */
void lockprof_write(const char *path);

#endif

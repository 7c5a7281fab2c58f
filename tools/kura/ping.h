/*
 * ping: `kura ping`, a health check (see ping.c). Exit statuses, for
 * keepalived's vrrp_script and load balancers:
 */
#ifndef KURA_TOOLS_PING_H
#define KURA_TOOLS_PING_H

enum ping_status {
    PING_OK = 0,       /* answering and accepting writes */
    PING_READONLY = 1, /* answering, refusing writes (kura_writable 0) */
    PING_DOWN = 2,     /* no answer within the timeout, or not a kurad */
    PING_USAGE = 3,    /* bad options or an unreadable --auth file */
};

/* `kura ping` with its arguments (argv[0] is "ping"); returns the exit
 * status above. */
int ping_cmd(int argc, char **argv);

#endif

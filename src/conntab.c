/*
 * conntab: the open sockets, for `stats conns` (see conntab.h).
 */
#include "conntab.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

static const char *const state_names[CONNTAB_STATE_COUNT] = {
    [CONNTAB_LISTENING] = "conn_listening",
    [CONNTAB_WAITING] = "conn_waiting",
    [CONNTAB_READ] = "conn_read",
    [CONNTAB_PARSE] = "conn_parse_cmd",
    [CONNTAB_NREAD] = "conn_nread",
    [CONNTAB_MWRITE] = "conn_mwrite",
    [CONNTAB_CLOSING] = "conn_closing",
};

int
conntab_init(struct conntab *t, size_t nfds)
{
    t->slots = calloc(nfds, sizeof(*t->slots));
    if (t->slots == NULL) {
        return -1;
    }
    t->nslots = nfds;
    pthread_mutex_init(&t->lock, NULL);
    return 0;
}

void
conntab_deinit(struct conntab *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        free(t->slots[i]);
    }
    free(t->slots);
    t->slots = NULL;
    t->nslots = 0;
    pthread_mutex_destroy(&t->lock);
}

uint32_t
conntab_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint32_t)ts.tv_sec + 1; /* never 0: 0 means "unchanged" */
}

struct conntab_slot *
conntab_add(struct conntab *t, int fd, bool listening, uint32_t now)
{
    if (t == NULL || fd < 0 || (size_t)fd >= t->nslots) {
        return NULL;
    }
    struct conntab_slot *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->peer_len = sizeof(s->peer);
    /* A listener shows its own address; a client its peer's. */
    int rc = listening ? getsockname(fd, (struct sockaddr *)&s->peer,
                                     &s->peer_len)
                       : getpeername(fd, (struct sockaddr *)&s->peer,
                                     &s->peer_len);
    if (rc != 0) {
        s->peer_len = 0;
    }
    atomic_init(&s->state,
                (uint8_t)(listening ? CONNTAB_LISTENING : CONNTAB_WAITING));
    atomic_init(&s->last_cmd_s, now);
    pthread_mutex_lock(&t->lock);
    free(t->slots[fd]); /* a slot left by a descriptor not given back */
    t->slots[fd] = s;
    pthread_mutex_unlock(&t->lock);
    return s;
}

void
conntab_remove(struct conntab *t, int fd)
{
    if (t == NULL || fd < 0 || (size_t)fd >= t->nslots) {
        return;
    }
    pthread_mutex_lock(&t->lock);
    free(t->slots[fd]);
    t->slots[fd] = NULL;
    pthread_mutex_unlock(&t->lock);
}

/* An address as memcached writes it: "tcp:1.2.3.4:5", "tcp6:[::1]:5",
 * "unix:/path", or "<AF n>" where there is none. */
static void
_address(const struct sockaddr_storage *ss, socklen_t len, char *out,
         size_t cap)
{
    char text[256] = "";
    unsigned port = 0;
    const char *proto = "?";
    int af = len > 0 ? ss->ss_family : AF_UNSPEC;

    if (af == AF_INET) {
        const struct sockaddr_in *in = (const void *)ss;
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
        port = ntohs(in->sin_port);
        proto = "tcp";
    } else if (af == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)ss;
        char a[INET6_ADDRSTRLEN] = "";
        inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
        snprintf(text, sizeof(text), "[%s]", a);
        port = ntohs(in6->sin6_port);
        proto = "tcp6";
    } else if (af == AF_UNIX) {
        const struct sockaddr_un *un = (const void *)ss;
        size_t n = len > offsetof(struct sockaddr_un, sun_path)
                       ? len - offsetof(struct sockaddr_un, sun_path)
                       : 0;
        if (n >= sizeof(text)) {
            n = sizeof(text) - 1;
        }
        memcpy(text, un->sun_path, n);
        text[n] = '\0';
        proto = "unix";
    }
    if (strlen(text) < 2) {
        snprintf(text, sizeof(text), "<AF %d>", af);
    }
    if (port != 0) {
        snprintf(out, cap, "%s:%s:%u", proto, text, port);
    } else {
        snprintf(out, cap, "%s:%s", proto, text);
    }
}

bool
conntab_list(struct conntab *t,
             bool (*emit)(void *arg, const char *name, const char *value),
             void *arg)
{
    uint32_t now = conntab_now();
    bool ok = true;

    pthread_mutex_lock(&t->lock);
    for (size_t fd = 0; ok && fd < t->nslots; fd++) {
        const struct conntab_slot *s = t->slots[fd];
        if (s == NULL) {
            continue;
        }
        char name[48];
        char value[320];
        uint8_t state = atomic_load_explicit(&s->state, memory_order_relaxed);
        uint32_t last =
            atomic_load_explicit(&s->last_cmd_s, memory_order_relaxed);

        _address(&s->peer, s->peer_len, value, sizeof(value));
        snprintf(name, sizeof(name), "%zu:addr", fd);
        ok = emit(arg, name, value);
        if (ok && state != CONNTAB_LISTENING) {
            struct sockaddr_storage local;
            socklen_t len = sizeof(local);
            if (getsockname((int)fd, (struct sockaddr *)&local, &len) != 0) {
                len = 0;
            }
            _address(&local, len, value, sizeof(value));
            snprintf(name, sizeof(name), "%zu:listen_addr", fd);
            ok = emit(arg, name, value);
        }
        if (ok) {
            snprintf(name, sizeof(name), "%zu:state", fd);
            ok = emit(arg, name,
                      state < CONNTAB_STATE_COUNT ? state_names[state] : "?");
        }
        if (ok) {
            snprintf(name, sizeof(name), "%zu:secs_since_last_cmd", fd);
            snprintf(value, sizeof(value), "%u",
                     now >= last ? now - last : 0);
            ok = emit(arg, name, value);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

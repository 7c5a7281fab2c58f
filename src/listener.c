/*
 * listener: accept and dispatch (see listener.h).
 */
#include "listener.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tls.h"
#include "util.h"

/* memcached's words at its connection limit, before it closes. */
static const char too_many[] = "ERROR Too many open connections\r\n";

static void
_on_accept(struct evconnlistener *evl, evutil_socket_t fd,
           struct sockaddr *addr, int socklen, void *arg)
{
    struct listener *l = arg;
    int one = 1;

    (void)evl;
    (void)socklen;
    atomic_fetch_add(&l->total_conns, 1);
    uint64_t curr = atomic_fetch_add(l->curr_conns, 1);
    if (curr >= l->maxconn) {
        atomic_fetch_sub(l->curr_conns, 1);
        atomic_fetch_add(&l->rejected_conns, 1);
        ssize_t w = l->tls ? send(fd, tls_plain_alert, TLS_PLAIN_ALERT_LEN,
                                  MSG_NOSIGNAL | MSG_DONTWAIT)
                           : send(fd, too_many, sizeof(too_many) - 1,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        close(fd);
        return;
    }
    if (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    struct worker *w = &l->workers[l->next];
    l->next = (l->next + 1) % l->nworkers;
    if (worker_dispatch(w, fd, l->tls) != 0) {
        atomic_fetch_sub(l->curr_conns, 1);
        close(fd);
    }
}

static void
_on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct listener *l = arg;

    (void)fd;
    (void)what;
    if (l->evl != NULL) {
        evconnlistener_enable(l->evl);
        atomic_store(&l->accepting, true);
        atomic_fetch_add(&l->disabled_us,
                         util_mono_us() - atomic_load(&l->disabled_since_us));
    }
}

static void
_on_error(struct evconnlistener *evl, void *arg)
{
    struct listener *l = arg;
    int err = EVUTIL_SOCKET_ERROR();

    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        /* Out of descriptors: pause instead of spinning on accept. */
        log_limited(l->log, LOG_WARN, "listener: accept: %s; pausing 100 ms",
                    strerror(err));
        evconnlistener_disable(evl);
        atomic_store(&l->accepting, false);
        atomic_fetch_add(&l->disabled_count, 1);
        atomic_store(&l->disabled_since_us, util_mono_us());
        struct timeval tv = {0, 100000};
        event_add(l->resume_ev, &tv);
        return;
    }
    log_limited(l->log, LOG_WARN, "listener: accept: %s", strerror(err));
}

static int
_bind_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sun;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (!util_strlcpy(sun.sun_path, path, sizeof(sun.sun_path))) {
        snprintf(err, errlen, "unix socket path too long: %s", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    unlink(path); /* a socket file left by a previous run */
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int
_bind_tcp(const char *host, int port, char *err, size_t errlen)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char service[16];
    int one = 1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    int saved = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            break;
        }
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
                 strerror(saved));
    }
    return fd;
}

int
listener_bind(struct listener *l, const char *host, int port, bool tls,
              char *err, size_t errlen)
{
    memset(l, 0, sizeof(*l));
    l->tls = tls;
    if (port == 0) {
        util_strlcpy(l->name, host, sizeof(l->name));
    } else {
        snprintf(l->name, sizeof(l->name), "%s:%d", host, port);
    }
    int fd;
    if (port == 0) {
        fd = _bind_unix(host, err, errlen);
        if (fd >= 0) {
            util_strlcpy(l->unix_path, host, sizeof(l->unix_path));
        }
    } else {
        fd = _bind_tcp(host, port, err, errlen);
    }
    l->fd = fd;
    return fd < 0 ? -1 : 0;
}

int
listener_start(struct listener *l, const struct listener_env *env,
               char *err, size_t errlen)
{
    l->base = env->base;
    l->workers = env->workers;
    l->nworkers = env->nworkers;
    l->maxconn = env->maxconn;
    l->curr_conns = env->curr_conns;
    l->log = env->log;
    if (listen(l->fd, LISTENER_BACKLOG) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", l->name,
                 strerror(errno));
        return -1;
    }
    l->resume_ev = evtimer_new(l->base, _on_resume, l);
    /* Backlog 0: the socket already listens with ours; -1 would make
     * libevent listen again with 128. */
    l->evl = evconnlistener_new(l->base, _on_accept, l, LEV_OPT_CLOSE_ON_FREE,
                                0, l->fd);
    if (l->evl == NULL || l->resume_ev == NULL) {
        snprintf(err, errlen, "cannot set up the listener");
        return -1;
    }
    l->fd = -1; /* the evconnlistener owns it now */
    evconnlistener_set_error_cb(l->evl, _on_error);
    atomic_store(&l->accepting, true);
    return 0;
}

void
listener_close(struct listener *l)
{
    if (l->evl != NULL) {
        evconnlistener_free(l->evl);
        l->evl = NULL;
    }
    if (l->fd >= 0) {
        close(l->fd); /* bound, never started */
        l->fd = -1;
    }
    if (l->unix_path[0] != '\0') {
        unlink(l->unix_path);
        l->unix_path[0] = '\0';
    }
    if (l->resume_ev != NULL) {
        event_free(l->resume_ev);
        l->resume_ev = NULL;
    }
    atomic_store(&l->accepting, false);
}

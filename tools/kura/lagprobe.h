/*
 * lagprobe: measures replication lag from the outside while a load runs.
 *
 * Every `interval_ms` a probe thread stores a fresh key on the primary
 * and, once the primary has acknowledged it, polls the secondary until the
 * key is visible there. The time between the acknowledgement and the first
 * successful read is one lag sample (resolution: the 1 ms poll interval).
 */
#ifndef KURA_LAGPROBE_H
#define KURA_LAGPROBE_H

#include <stdint.h>

#include "tls.h"

struct lagprobe;

struct lagprobe_result {
    uint64_t samples;
    uint64_t p50_us;
    uint64_t p99_us;
    uint64_t max_us;
    uint64_t timeouts; /* probes not visible within 10 s */
};

/*
 * Starts probing `host`:`primary` -> `host`:`secondary`, over TLS with
 * `tls` (borrowed: it must outlive the probe). NULL on error.
 */
struct lagprobe *lagprobe_start(const char *host, int primary, int secondary,
                                unsigned interval_ms, struct tls_ctx *tls);

/* Stops the probe thread and reports. Frees `p`. */
void lagprobe_stop(struct lagprobe *p, struct lagprobe_result *r);

#endif

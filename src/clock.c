/*
 * clock: strictly increasing microsecond write stamps (see clock.h).
 */
#include "clock.h"

#include "util.h"

void
clock_init(struct clock *c, uint64_t floor_us)
{
    atomic_init(&c->last_us, floor_us);
}

uint64_t
clock_next(struct clock *c)
{
    uint64_t now = util_now_us();
    uint64_t last = atomic_load_explicit(&c->last_us, memory_order_relaxed);

    for (;;) {
        uint64_t next = now > last ? now : last + 1;
        if (atomic_compare_exchange_weak_explicit(&c->last_us, &last, next,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
            return next;
        }
    }
}

void
clock_observe(struct clock *c, uint64_t ts_us)
{
    uint64_t last = atomic_load_explicit(&c->last_us, memory_order_relaxed);

    while (ts_us > last) {
        if (atomic_compare_exchange_weak_explicit(&c->last_us, &last, ts_us,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
            return;
        }
    }
}

uint64_t
clock_last(const struct clock *c)
{
    return atomic_load_explicit(&c->last_us, memory_order_relaxed);
}

/*
 * expiry: exptime and flush_all arithmetic (see expiry.h).
 */
#include "expiry.h"

uint32_t
expiry_absolute(int64_t exptime, int64_t now_s)
{
    int64_t abs;

    if (exptime == 0) {
        return 0;
    }
    if (exptime < 0) {
        return EXPIRY_ALREADY;
    }
    if (exptime > EXPIRY_MAX_RELATIVE) {
        if (exptime <= now_s) {
            return EXPIRY_ALREADY;
        }
        abs = exptime;
    } else {
        abs = now_s + exptime;
    }
    if (abs > (int64_t)UINT32_MAX) {
        return UINT32_MAX;
    }
    return (uint32_t)abs;
}

bool
expiry_expired(uint32_t abs, int64_t now_s)
{
    return abs != 0 && (int64_t)abs <= now_s;
}

bool
expiry_flushed(const struct expiry_flush *f, uint64_t ts_us, uint64_t now_us)
{
    if (ts_us <= f->applied_us) {
        return true;
    }
    return f->pending_us != 0 && f->pending_us <= now_us &&
           ts_us <= f->pending_us;
}

uint64_t
expiry_flush_deadline(int64_t delay_s, uint64_t now_us)
{
    uint64_t deadline;

    if (delay_s <= 0) {
        return 0;
    }
    if (delay_s > EXPIRY_MAX_RELATIVE) {
        deadline = (uint64_t)delay_s * 1000000u;
    } else {
        deadline = now_us + (uint64_t)delay_s * 1000000u;
    }
    return deadline > now_us ? deadline : 0;
}

bool
expiry_flush_apply(struct expiry_flush *f, uint64_t stamp_us,
                   uint64_t deadline_us)
{
    struct expiry_flush old = *f;

    if (deadline_us == 0) {
        if (stamp_us > f->applied_us) {
            f->applied_us = stamp_us;
        }
        if (f->pending_stamp < stamp_us) {
            f->pending_us = 0;
            f->pending_stamp = 0;
        }
    } else if (stamp_us > f->pending_stamp && stamp_us > f->applied_us) {
        f->pending_us = deadline_us;
        f->pending_stamp = stamp_us;
    }
    return old.applied_us != f->applied_us || old.pending_us != f->pending_us ||
           old.pending_stamp != f->pending_stamp;
}

bool
expiry_flush_settle(struct expiry_flush *f, uint64_t now_us)
{
    if (f->pending_us == 0 || f->pending_us > now_us) {
        return false;
    }
    if (f->pending_us > f->applied_us) {
        f->applied_us = f->pending_us;
    }
    f->pending_us = 0;
    f->pending_stamp = 0;
    return true;
}

/* inject_none.c — the "none" backend of inject.h: nothing is ever typed.
 *
 * An entity whose backend is none receives every message by pulling it
 * (fleet_poll), like a lead: the forward path reads the missing deliver as
 * "hold it". The row exists so a profile can say so by name. */
#include "gateway/inject/inject.h"

const fl_inject_type fl_inject_none = {
    .name = "none",
    .status = NULL,
    .deliver = NULL,
    .open = NULL,
    .close = NULL,
};

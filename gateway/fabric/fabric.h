/* fabric.h — the AMQP fabric: the cross-host backend of the gateway.
 *
 * fabric.c owns the broker link for a gateway that has a broker URI: it
 * routes messages for other hosts' entities through the broker, settles
 * the deliveries it receives (fabric_settle.c), and runs presence
 * (presence.c) and the receive checks (inbound.c). The core knows none of
 * this: it sees the fabric only as the fl_remote_ops it registers
 * (remote.h). The one name exported for it is the backend type the
 * composition root (gateway/gateway.c) starts. */
#ifndef FL_FABRIC_H
#define FL_FABRIC_H

#include "gateway/core/remote.h"
#include "gateway/proto/envelope.h"

/* name "broker"; start connects the link (it returns at once: connecting
 * happens on the broker thread) and registers the fabric on the gateway. */
extern const fl_remote_type fl_fabric_type;

/* The envelope of m as gw publishes it (unsigned): every field from m, this
 * host as host, and an expiresAt (the inbox TTL's when m sets none). */
void fl_env_from_msg(fl_gw *gw, const fl_msg *m, fl_envelope *env);

#endif

/* room.h — a gateway/rooms/ header including the core, a lower rank. */
#ifndef FIX_ROOM_H
#define FIX_ROOM_H
#include "gateway/core/core.h"
int fix_room(void);
#endif

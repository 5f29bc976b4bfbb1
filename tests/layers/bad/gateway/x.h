/* x.h — a header at the top of gateway/, including lower ranks. */
#ifndef FIX_X_H
#define FIX_X_H
#include "common/base.h"
#include "gateway/rooms/room.h"
#include "gateway/verbs/verb.h"
int fix_x(void);
#endif

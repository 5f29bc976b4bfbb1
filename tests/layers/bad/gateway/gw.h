/* gw.h — the core's public header, at the top of gateway/ but ranked as
 * gateway/core/. */
#ifndef FIX_GW_H
#define FIX_GW_H
#include "common/base.h"
int fix_core(void);
#endif

/* x.h — a gateway/ header including the layer below. */
#ifndef FIX_X_H
#define FIX_X_H
#include "common/base.h"
int fix_x(void);
#endif

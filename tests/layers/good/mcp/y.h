/* y.h — an mcp/ header. */
#ifndef FIX_Y_H
#define FIX_Y_H
#include "gateway/x.h"
int fix_y(void);
#endif

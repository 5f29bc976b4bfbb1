/* y.c — an mcp/ file including gateway/ and common/. */
#include "mcp/y.h"

#include "../gateway/x.h"
#include "common/base.h"

int fix_y(void) { return fix_x(); }

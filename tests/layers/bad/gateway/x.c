/* x.c — a gateway/ file including mcp/: the one wrong include. */
#include "gateway/x.h"

#include "common/base.h"
#include "mcp/y.h"

int fix_x(void) { return fix_base(); }

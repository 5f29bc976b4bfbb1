/* x.c — a gateway/ file including its own layer and a lower one. */
#include "gateway/x.h"

#include <stdio.h>

#include "common/base.h"
#include "x.h"

int fix_x(void) { return fix_base(); }

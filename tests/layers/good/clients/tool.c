/* tool.c — a client including every layer below it. */
#include "common/base.h"
#include "gateway/x.h"
#include "mcp/y.h"

int main(void) { return fix_y(); }

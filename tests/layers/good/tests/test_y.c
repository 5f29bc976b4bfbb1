/* test_y.c — tests may include any layer. */
#include "clients/../mcp/y.h"
#include "gateway/x.h"

int main(void) { return fix_y(); }

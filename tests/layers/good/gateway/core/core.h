/* core.h — a gateway/core/ header including the core's public one. */
#ifndef FIX_CORE_H
#define FIX_CORE_H
#include "gateway/gw.h"
#endif

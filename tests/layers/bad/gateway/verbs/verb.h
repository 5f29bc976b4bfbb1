/* verb.h — a gateway/verbs/ header including the core, a lower rank. */
#ifndef FIX_VERB_H
#define FIX_VERB_H
#include "../core/core.h"
int fix_verb(void);
#endif

/* base.h — the lowest layer of the check-layers fixture. */
#ifndef FIX_BASE_H
#define FIX_BASE_H
int fix_base(void);
#endif

/* c.c — rank 1: uses proto. */
int p_fn(void);
int c_fn(void);
int c_fn(void) { return p_fn() + 1; }

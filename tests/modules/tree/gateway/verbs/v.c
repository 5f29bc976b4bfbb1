/* v.c — rank 2: uses core. */
int c_fn(void);
int v_fn(void);
int v_fn(void) { return c_fn() + 2; }

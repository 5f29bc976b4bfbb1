/* r.c — rank 2: uses core. */
int c_fn(void);
int r_fn(void);
int r_fn(void) { return c_fn() + 3; }

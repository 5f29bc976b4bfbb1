/* lone.c — rank 1: used by nobody. */
int p_fn(void);
int lone_fn(void);
int lone_fn(void) { return p_fn(); }

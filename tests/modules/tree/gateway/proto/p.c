/* p.c — rank 0: uses nothing. */
int p_fn(void);
int p_fn(void) { return 1; }

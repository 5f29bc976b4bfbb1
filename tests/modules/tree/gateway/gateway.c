/* gateway.c — rank 3: the top of the gateway, uses both rank 2 folders. */
int v_fn(void);
int r_fn(void);
int lone_fn(void);
int gw_fn(void);
int gw_fn(void) { return v_fn() + r_fn() + lone_fn(); }

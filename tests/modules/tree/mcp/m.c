/* m.c — rank 4: uses the gateway and n.c. */
int gw_fn(void);
int n_fn(void);
int m_fn(void);
int m_fn(void) { return gw_fn() + n_fn(); }

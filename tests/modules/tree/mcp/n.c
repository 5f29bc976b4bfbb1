/* n.c — rank 4: the lower file of mcp/. */
int n_fn(void);
int n_fn(void) { return 4; }

/* fleetctl_mcp_config.h — `fleetctl mcp-config claude|opencode`: prints an
 * MCP client config that launches the fleet-mcp next to this fleetctl. */
#ifndef FL_FLEETCTL_MCP_CONFIG_H
#define FL_FLEETCTL_MCP_CONFIG_H

/* Prints the config for Claude Code (claude != 0) or opencode on stdout and
 * how to install it on stderr. as is the agent's FLEET_NAME (NULL: "lead"),
 * socket_opt the --socket given (NULL: none; a relative path is made
 * absolute). Returns an exit status (FL_EXIT_OK or FL_EXIT_FAIL). */
int fl_ctl_mcp_config(int claude, const char *as, const char *socket_opt);

#endif

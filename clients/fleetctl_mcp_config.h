/* fleetctl_mcp_config.h — `fleetctl mcp-config claude|opencode|codex`:
 * prints an MCP client config that launches the fleet-mcp next to this
 * fleetctl. */
#ifndef FL_FLEETCTL_MCP_CONFIG_H
#define FL_FLEETCTL_MCP_CONFIG_H

/* The MCP clients mcp-config writes for. */
typedef enum fl_mcp_client { FL_MCP_CLAUDE, FL_MCP_OPENCODE, FL_MCP_CODEX } fl_mcp_client;

/* Prints the config for client on stdout (JSON for Claude Code and
 * opencode, a TOML table for Codex) and how to install it on stderr. as is
 * the agent's FLEET_NAME (NULL: "lead"), socket_opt the --socket given
 * (NULL: none; a relative path is made absolute). Returns an exit status
 * (FL_EXIT_OK or FL_EXIT_FAIL). */
int fl_ctl_mcp_config(fl_mcp_client client, const char *as, const char *socket_opt);

#endif

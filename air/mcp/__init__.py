"""MCP client: tools that Model Context Protocol servers serve, offered through the ToolRegistry.

A tool source of the parent (IMPL-MCP-1): the servers declared in ``~/.air/mcp.yaml`` and (once
the project is trusted) ``.air/shared/mcp.yaml`` are started by the runtime, never by a worker;
their tools are registered in the parent's ToolRegistry under API-legal names and every call
goes through the PermissionEngine like any tool's. Modules: ``jsonrpc`` (sans-IO messages),
``files`` (where the two files are), ``config`` (the two files), ``stdio`` and ``http`` (the
transports), ``client`` (the session: initialize, tools/list, tools/call), ``bridge`` (names,
definitions, results), ``service`` (start, register, stop: the process tree dies with the
session). Importing the package does nothing.
"""

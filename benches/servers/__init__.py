"""Tiny stdio MCP servers with one `echo` tool, run as child processes by `bench_server_stdio.py`."""

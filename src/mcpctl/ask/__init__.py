"""`ask`: answers from what the project's servers know (their text resources), cut into passages
and ranked like tools are (mcp-free: the gateway reads the resources, `gateway.knowledge`)."""

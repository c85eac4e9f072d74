"""How the gateway ranks memory for a query."""

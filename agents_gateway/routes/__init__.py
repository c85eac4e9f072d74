"""The gateway's endpoints, one module per resource."""

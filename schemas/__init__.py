"""The event contract: versioned Avro schemas and the codec that reads every released version."""

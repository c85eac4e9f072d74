"""Where memory is written: Postgres (migrations, upserts, queries) and Redis (session buffers)."""

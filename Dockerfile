# One image for the worker, the gateway and the migrator (see docker-compose.yml).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY memstream ./memstream
COPY schemas ./schemas
COPY streams ./streams
COPY sinks ./sinks
COPY agents_gateway ./agents_gateway
COPY bench ./bench
COPY ops ./ops
COPY clients/python ./clients/python
# memstream-client (the SDK) ships in this repository: installed in the same pip command, it
# is what the `mcp` extra's requirement resolves to (MCP at /mcp and `memstream mcp`).
# The processes write only in their data directory (Faust's under <data dir>/faust), never in
# /app, which stays root's: the directory is the user's home, made here and owned by it.
RUN pip install --no-cache-dir './clients/python[mcp]' '.[mcp]' \
    && useradd --system --no-create-home --home-dir /var/lib/memstream memstream \
    && install -d -o memstream -g memstream -m 0700 /var/lib/memstream
USER memstream
ENV MEMSTREAM_DATA_DIR=/var/lib/memstream
ENTRYPOINT ["memstream"]
CMD ["gateway"]

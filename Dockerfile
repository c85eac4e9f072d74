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
RUN pip install --no-cache-dir './clients/python[mcp]' '.[mcp]' && useradd --system --no-create-home memstream
USER memstream
ENV MEMSTREAM_DATA_DIR=/tmp/memstream
ENTRYPOINT ["memstream"]
CMD ["gateway"]

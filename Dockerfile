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
RUN pip install --no-cache-dir . && useradd --system --no-create-home memstream
USER memstream
ENV MEMSTREAM_DATA_DIR=/tmp/memstream
ENTRYPOINT ["memstream"]
CMD ["gateway"]

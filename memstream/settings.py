"""One frozen settings model for every memstream process.

Built once in ``main`` (or a lifespan) and passed down; nothing here is read at
import time. Every field can be set with an environment variable prefixed
``MEMSTREAM_`` (``MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS=...``). A service left unset
is started by the embedded local stack (``memstream up``), which then hands its
address to the worker and the gateway through the same variables.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstream.errors import MemstreamError
from memstream.kafka_security import (
    PLAINTEXT,
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    KafkaSecurity,
    KafkaSecurityProtocol,
    SaslMechanism,
    tls_context,
)

log = logging.getLogger(__name__)

VectorIndex = Literal["auto", "exact", "hnsw"]
EmbeddingProviderName = Literal["auto", "local", "gemini"]
LLMProviderName = Literal["auto", "offline", "gemini"]
#: The shortest MEMSTREAM_OPS_TOKEN accepted.
MIN_OPS_TOKEN_CHARS = 32


class Settings(BaseSettings):
    """Configuration of a memstream process (worker, gateway, CLI)."""

    # hide_input_in_errors: an invalid setting's error must not print the other settings' secrets.
    model_config = SettingsConfigDict(env_prefix="MEMSTREAM_", frozen=True, extra="ignore", hide_input_in_errors=True)

    # --- where the embedded stack keeps its state -------------------------------
    data_dir: Path = Field(
        default=Path(".memstream"),
        description="State of the embedded stack: the Postgres cluster, Valkey's append-only file, logs, "
        "the services' passwords and stack.json (owner-only); a relative path is from the working directory.",
    )

    # --- bring-your-own services (None = started by `memstream up`) ----------------
    kafka_bootstrap_servers: str | None = Field(
        default=None,
        description="Kafka bootstrap servers, comma-separated (`broker1:9092,broker2:9092`); "
        "unset: `memstream up` starts the embedded Tansu broker.",
    )
    database_url: SecretStr | None = Field(
        default=None, description="Postgres URL the worker and gateway use (the app role)."
    )
    database_owner_url: SecretStr | None = Field(
        default=None,
        description="Postgres URL migrations run as (the owner role); defaults to database_url.",
    )
    database_app_role: str | None = Field(
        default=None,
        description="With your own Postgres: the role the worker and gateway log in as; "
        "migrations grant it least privilege.",
    )
    redis_url: SecretStr | None = Field(
        default=None,
        description="Redis, Valkey or Memorystore URL (`redis://host:6379/0`) for session buffers, grants, "
        "rate limits and worker heartbeats; unset: `memstream up` starts an embedded Valkey.",
    )

    # --- Kafka security (a managed Kafka service; the embedded broker is PLAINTEXT) ---------
    kafka_security_protocol: KafkaSecurityProtocol = Field(
        default="PLAINTEXT",
        description="How every Kafka client of the worker, gateway and CLI connects: PLAINTEXT, SSL (TLS), "
        "SASL_PLAINTEXT (a password, unencrypted: private networks only) or SASL_SSL (a password over TLS, "
        "what managed Kafka services ask for).",
    )
    kafka_sasl_mechanism: SaslMechanism | None = Field(
        default=None,
        description="With SASL_PLAINTEXT or SASL_SSL (and required there): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
    )
    kafka_sasl_username: str | None = Field(
        default=None, description="With SASL_PLAINTEXT or SASL_SSL (and required there): the SASL user name."
    )
    kafka_sasl_password: SecretStr | None = Field(
        default=None, description="With SASL_PLAINTEXT or SASL_SSL (and required there): the SASL password."
    )
    kafka_ssl_cafile: Path | None = Field(
        default=None,
        description="With SSL or SASL_SSL: PEM file of the CAs that sign the brokers' certificates; "
        "unset: the system's CAs (enough for most managed services).",
    )
    kafka_ssl_certfile: Path | None = Field(
        default=None,
        description="With SSL or SASL_SSL, for mutual TLS: PEM file of this client's certificate "
        "(needs kafka_ssl_keyfile).",
    )
    kafka_ssl_keyfile: Path | None = Field(
        default=None,
        description="With kafka_ssl_certfile: PEM file of the client certificate's private key "
        "(the same file when it holds both).",
    )
    kafka_ssl_key_password: SecretStr | None = Field(
        default=None, description="With kafka_ssl_keyfile: the password of an encrypted private key."
    )

    # --- embedded stack ports (0 = pick a free port) ------------------------------
    embedded_broker_port: int = Field(
        default=9092, description="Port of the embedded Tansu broker `memstream up` starts (0 = a free port)."
    )
    embedded_postgres_port: int = Field(
        default=5433,
        description="Port of the embedded PostgreSQL `memstream up` starts on 127.0.0.1 (0 = a free port).",
    )
    embedded_redis_port: int = Field(
        default=6380, description="Port of the embedded Valkey `memstream up` starts on 127.0.0.1 (0 = a free port)."
    )
    embedded_postgres_shared_buffers_mb: int = Field(
        default=0,
        ge=0,
        description="Shared buffers of the embedded PostgreSQL in MiB (0 = a quarter of the machine's memory, "
        "between 256 MiB and 8 GiB: reads stay fast while a user's memory fits in them).",
    )

    # --- the event log ------------------------------------------------------------
    topic_partitions: int = Field(
        default=12,
        ge=1,
        description="Partitions of the topics memstream creates, the DLQ's one apart (12 is shared evenly by 1, 2, "
        "3, 4 or 6 workers); an existing topic keeps its count.",
    )
    topic_replication_factor: int = Field(
        default=1, ge=1, description="Replication factor of the topics memstream creates."
    )
    app_id: str = Field(
        default="memstream",
        description="The ingest workers' consumer group (the memory worker's is `<app_id>-memory`); "
        "also names their heartbeats and defect records in Redis.",
    )
    embedded_broker: bool = Field(
        default=False,
        description="True when the broker is the embedded Tansu (enables its narrow client workarounds); "
        "`memstream up` sets it.",
    )
    broker_session_timeout_s: float = Field(
        default=6.0,
        description="Consumer session timeout: a worker silent this long leaves its group and its partitions "
        "are reassigned.",
    )
    broker_heartbeat_interval_s: float = Field(
        default=1.5, description="How often a worker's consumer heartbeats its group (well under the session timeout)."
    )

    # --- the worker -----------------------------------------------------------------
    batch_max_events: int = Field(default=500, ge=1, description="Most events a worker takes into one batch.")
    batch_within_s: float = Field(
        default=0.05, gt=0, description="A worker's batch holds what arrived within this long (or batch_max_events)."
    )
    retry_initial_s: float = Field(
        default=0.2,
        description="First delay of a worker's backoff on a store that is down (jittered, doubling to "
        "retry_max_s; retried for as long as it takes).",
    )
    retry_max_s: float = Field(
        default=10.0,
        description="Longest delay of a worker's backoff; also the first delay of a turn parked on "
        "memstream.retry.v1 while the LLM keeps failing.",
    )
    defect_attempts: int = Field(
        default=5,
        ge=1,
        description="Tries of an error that is neither an outage nor bad data before the worker "
        "stops as a code defect (exit status 70; the batch is consumed again after the restart).",
    )
    worker_heartbeat_ttl_s: float = Field(
        default=10.0,
        description="A worker announces itself in Redis every third of this; silent this long, /readyz/workers no "
        "longer counts it.",
    )
    audit_relay_interval_s: float = Field(
        default=0.5, gt=0, description="How often the ingest worker publishes the audit outbox to memstream.audit.v1."
    )
    worker_metrics_host: str = Field(default="127.0.0.1", description="Where a worker serves /metrics.")
    worker_metrics_port: int = Field(
        default=0,
        ge=-1,
        description="A worker's /metrics port: 0 = a free one (logged; `memstream up` gives each worker its own "
        "and records it in stack.json), -1 = no metrics endpoint.",
    )
    consumer_lag_interval_s: float = Field(default=1.0, gt=0, description="How often a worker measures its lag.")
    worker_stop_grace_s: float = Field(
        default=30.0, gt=0, description="A stopping worker exits after this long even if its graceful stop hangs."
    )

    # --- session buffer ---------------------------------------------------------------
    buffer_max_turns: int = Field(default=20, ge=1, description="The window: newest turns kept raw.")
    buffer_max_tokens: int = Field(
        default=4000, ge=1, description="The window's token budget (the newest turn is kept whatever its size)."
    )
    buffer_hard_cap_turns: int = Field(
        default=200, ge=1, description="Beyond this, the oldest turns are dropped unsummarised."
    )
    compaction_request_ttl_s: float = Field(
        default=30.0,
        gt=0,
        description="A session has one summarising request pending at a time; one not done within this is sent again.",
    )
    summary_max_tokens: int = Field(
        default=400, ge=50, description="Token budget of a session's rolling summary and of a daily summary."
    )
    summary_fold_max_turns: int = Field(default=200, ge=1, description="Turns per summariser call.")
    compact_after_days: int = Field(
        default=30, ge=1, description="Episodes older than this are compacted into daily summaries."
    )
    compact_min_episodes: int = Field(
        default=2, ge=1, description="A day of a user's episodes is compacted only when it has at least this many."
    )
    maintenance_interval_s: float = Field(
        default=3600.0,
        gt=0,
        description="How often the memory worker runs maintenance (expiry, compaction, forgetting, vector index).",
    )
    fact_merge_threshold: float = Field(
        default=0.92, gt=0, le=1, description="Cosine above which a fact about the same subject merges."
    )

    # --- embeddings ---------------------------------------------------------------------
    embedding_provider: EmbeddingProviderName = Field(
        default="auto",
        description="auto: Gemini when a key is set, else local; local: the WordLlama model, in process; "
        "gemini: needs the key.",
    )
    gemini_api_key: SecretStr | None = Field(
        default=None,
        description="Gemini API key; with the auto providers, embeddings and the LLM then use Gemini.",
    )
    gemini_base_url: str | None = Field(
        default=None, description="Override of the Gemini API endpoint (tests, proxies)."
    )
    gemini_embedding_model: str = Field(
        default="gemini-embedding-001", description="Gemini embedding model (with the gemini embedding provider)."
    )
    gemini_embedding_dim: int = Field(
        default=768, description="Dimension of Gemini embeddings (part of the model name recorded with each vector)."
    )
    vector_index: VectorIndex = Field(
        default="auto",
        description="auto: an HNSW index, used for users with hnsw_min_episodes or more (exact below);"
        " exact: no index, always exact; hnsw: the index for every query.",
    )
    hnsw_min_episodes: int = Field(
        default=20_000, ge=0, description="With vector_index=auto, the episodes a user needs for HNSW search."
    )

    # --- LLM (fact extraction, summaries, compaction) ------------------------------------
    llm_provider: LLMProviderName = Field(
        default="auto",
        description="auto: Gemini when a key is set, else offline; offline: the rule-based extractor and "
        "extractive summariser; gemini: needs the key.",
    )
    gemini_model: str = Field(
        default="gemini-2.5-flash",
        description="Gemini model for fact extraction, summaries and the gateway's query decomposition.",
    )
    llm_max_concurrency: int = Field(default=4, ge=1, description="Concurrent LLM calls per process.")
    llm_timeout_s: float = Field(default=30.0, gt=0, description="Time limit of one LLM call (a timeout is retried).")
    llm_max_attempts: int = Field(default=4, ge=1, description="Tries per call on 429/5xx/timeouts.")
    llm_retry_initial_s: float = Field(
        default=0.5, gt=0, description="First delay between tries of an LLM call (doubling, jittered)."
    )
    llm_retry_max_s: float = Field(
        default=8.0, gt=0, description="Longest delay between tries of an LLM call, even when Gemini asks for more."
    )
    text_search_config: str = Field(
        default="english",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$",
        description="Postgres text-search configuration for tenants that set none (english, german, simple, ...).",
    )

    # --- the gateway ----------------------------------------------------------------------
    gateway_host: str = Field(
        default="127.0.0.1", description="Address the gateway listens on (0.0.0.0: every interface)."
    )
    gateway_port: int = Field(
        default=8080, description="Port the gateway listens on (also where `memstream demo` and `mcp` find it)."
    )
    max_content_chars: int = Field(
        default=32_000, ge=1, description="Most characters of a turn's content (the gateway and the worker check)."
    )
    max_batch_turns: int = Field(default=500, ge=1, description="Most turns in one POST /v1/turns.")
    max_body_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Body cap of POST /v1/turns and POST /mcp (batches of turns)."
    )
    search_candidates: int = Field(
        default=50,
        ge=1,
        description="Candidates each search list (vector, full text) yields before fusion (at least the k asked for).",
    )
    search_cache_s: float = Field(
        default=10.0,
        ge=0,
        le=3600,
        description="Seconds a gateway process answers a repeated identical search (an agent framework asking"
        " on every model call) from memory, while the user's memory is unchanged; 0: never.",
    )
    search_cache_entries: int = Field(
        default=2048, ge=0, description="Most answers each gateway process keeps for repeated searches."
    )
    context_relative_floor: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="A relevant memory of /v1/context scores at least this share of the best one's score.",
    )
    context_min_similarity: float | None = Field(
        default=None,
        ge=-1,
        le=1,
        description="A relevant memory of /v1/context that shares no word with the query needs this cosine"
        " to it; unset: the embedder's own measured floor (none for an unmeasured model).",
    )
    rrf_k: int = Field(
        default=60, ge=1, description="The k of reciprocal rank fusion: a result scores weight / (k + rank) per list."
    )
    rrf_vector_weight: float = Field(
        default=0.5, ge=0, description="Weight of the vector list in fusion (per tenant: PUT /v1/tenant/ranking)."
    )
    rrf_text_weight: float = Field(
        default=0.5, ge=0, description="Weight of the full-text list in fusion (per tenant: PUT /v1/tenant/ranking)."
    )
    search_half_life_days: float = Field(
        default=30.0, gt=0, description="Episodes' recency weight moves halfway to the floor every N days."
    )
    search_decay_floor: float = Field(
        default=0.8, ge=0, le=1, description="The least an old episode's score is multiplied by (1 = no decay)."
    )
    produce_timeout_s: float = Field(
        default=10.0,
        description="The gateway waits this long for the broker to take a batch of turns (or to connect); then 503.",
    )
    event_claim_ttl_s: int = Field(
        default=7 * 86_400, ge=60, description="How long an event id stays claimed by its turn (a reuse is a 409)."
    )
    auth_cache_s: float = Field(default=10.0, ge=0, description="How long a key lookup is cached.")
    rate_limit_per_s: float = Field(default=50.0, gt=0, description="Requests/s per key (unless set on the key).")
    rate_limit_burst: float = Field(default=100.0, gt=0, description="Burst per key (its token bucket's size).")
    # --- gateway limits (agents_gateway/limits.py; docs/api.md, "Request limits") ------------
    max_json_body_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Body cap of every endpoint but /v1/turns and /mcp (max_body_bytes)."
    )
    body_read_timeout_s: float = Field(default=30.0, gt=0, description="A request's whole body must arrive within.")
    header_read_timeout_s: float = Field(
        default=10.0, gt=0, description="A request's headers must arrive within (from connection or previous response)."
    )
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, description="Request line + headers, at most.")
    keep_alive_timeout_s: int = Field(default=5, ge=1, description="An idle keep-alive connection is closed after.")
    gateway_workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Gateway processes on its port, each listening on a socket of its own (SO_REUSEPORT; "
        "`memstream up --gateway-workers N`). Each has its own Postgres pool (gateway_pool_size), caches and "
        "in-flight shares: the per-process limits below hold in each.",
    )
    gateway_pool_size: int = Field(
        default=16, ge=2, le=500, description="Postgres connections of one gateway process, at most."
    )
    gateway_pool_warm: bool = Field(
        default=True,
        description="A gateway process (`memstream gateway`, `memstream up`) opens all gateway_pool_size "
        "connections at start and keeps them, and runs the read path's statements once on each (read-only, as a tenant "
        "no key can name), so that no request pays a new connection's first use (docs/benchmarks.md). "
        "Off: connections open as requests need them.",
    )
    gateway_max_concurrency: int = Field(
        default=1000, ge=1, description="Connections + requests in flight per gateway process; beyond, 503."
    )
    max_in_flight_per_key: int = Field(
        default=64,
        ge=1,
        description="Requests of one key in flight at once in a gateway process (a slow body holds one); beyond, 429.",
    )
    max_in_flight_per_tenant: int = Field(
        default=256,
        ge=1,
        description="Requests of one tenant (all its keys) in flight at once in a gateway process; beyond, 429.",
    )
    gateway_docs: bool = Field(
        default=False,
        description="Serve the interactive API docs at /docs and /redoc (they load their scripts from a CDN "
        "and share the origin of /ui: off unless that origin serves no explorer).",
    )
    ops_token: SecretStr | None = Field(
        default=None,
        description="When set (at least 32 characters), /metrics, /openapi.json, /docs and /redoc answer only "
        "`Authorization: Bearer <this token>`, else 401 (API keys are not accepted there); the probes stay open. "
        "Unset: those paths are open to whoever reaches the gateway.",
    )
    forwarded_allow_ips: str = Field(
        default="",
        description="Proxies whose X-Forwarded-For the gateway believes (comma-separated addresses, or '*'); "
        "empty: none, the peer's address is the client's.",
    )
    addr_rate_limit_per_s: float = Field(
        default=10.0, gt=0, description="Requests/s per client address without a valid key (none, bad, unknown)."
    )
    addr_rate_limit_burst: float = Field(
        default=100.0, gt=0, description="Burst per client address without a valid key."
    )
    tenant_rate_limit_per_s: float = Field(default=500.0, gt=0, description="Requests/s per tenant, all keys together.")
    tenant_rate_limit_burst: float = Field(default=1000.0, gt=0, description="Burst per tenant, all keys together.")
    tenant_rate_limits: tuple[str, ...] = Field(
        default=(), description='Per-tenant overrides, "tenant=rate" or "tenant=rate/burst" (JSON list in the env).'
    )
    auth_cache_max_keys: int = Field(default=10_000, ge=1, description="Valid keys kept in the auth cache (LRU).")
    auth_negative_cache_size: int = Field(default=1024, ge=1, description="Unknown key ids remembered (LRU).")
    redis_max_connections: int = Field(default=128, ge=1, description="Redis connections per process (a pool).")
    redis_pool_timeout_s: float = Field(default=5.0, gt=0, description="Wait for a free Redis connection, at most.")

    # --- tool permissions ---------------------------------------------------------------
    preapproved_tools: tuple[str, ...] = Field(
        default=("memory.search", "memory.context", "memory.buffer"),
        description=(
            "Tools that only read memory: allowed by the permission engine without a rule"
            " (a BLOCK rule for one still blocks)."
        ),
    )
    allow_once_ttl_s: int = Field(
        default=300, ge=1, description="An allow-once grant not used within this many seconds expires."
    )
    permission_max_rules_per_tool: int = Field(
        default=50, ge=1, description="Permission rules per tool in one scope (the global rules, or one project's)."
    )
    permission_max_rules_per_tenant: int = Field(default=1000, ge=1, description="Permission rules per tenant.")
    permission_eval_budget_s: float = Field(
        default=0.25, gt=0, description="Time one evaluation may spend matching rules; beyond it, BLOCK."
    )
    permission_max_matching_per_tenant: int = Field(
        default=2,
        ge=1,
        description="Evaluations of one tenant matching rules at once (of 4 matcher threads per process); "
        "beyond it, 429 evaluations_busy.",
    )

    # --- logging ----------------------------------------------------------------------------
    log_level: str = Field(
        default="INFO", description="Log level of the CLI, the workers and the gateway (DEBUG, INFO, WARNING, ERROR)."
    )

    @field_validator("data_dir")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("ops_token", mode="before")
    @classmethod
    def _ops_token(cls, value: object) -> object:
        """An empty value (``MEMSTREAM_OPS_TOKEN=``) is no token; a short one is refused."""
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or text == "":
            return None
        if isinstance(text, str) and len(text) < MIN_OPS_TOKEN_CHARS:
            raise ValueError(
                f"ops_token must have at least {MIN_OPS_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`)"
            )
        return value

    @field_validator("kafka_ssl_cafile", "kafka_ssl_certfile", "kafka_ssl_keyfile")
    @classmethod
    def _existing_file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None:
            return None
        path = value.expanduser()
        if not path.is_file():
            raise ValueError(f"MEMSTREAM_{str(info.field_name).upper()}: no file at {path}")
        return path

    @model_validator(mode="after")
    def _coherent_kafka_security(self) -> Settings:
        """Every Kafka security setting either takes effect or is refused, never ignored."""
        protocol = self.kafka_security_protocol
        if protocol in SASL_PROTOCOLS:
            missing = [
                f"MEMSTREAM_KAFKA_SASL_{name.upper()}"
                for name, value in (
                    ("mechanism", self.kafka_sasl_mechanism),
                    ("username", self.kafka_sasl_username),
                    ("password", self.kafka_sasl_password),
                )
                if not value
            ]
            if missing:
                raise ValueError(f"MEMSTREAM_KAFKA_SECURITY_PROTOCOL={protocol} needs {', '.join(missing)}")
        else:
            stray = _set_variables(
                kafka_sasl_mechanism=self.kafka_sasl_mechanism,
                kafka_sasl_username=self.kafka_sasl_username,
                kafka_sasl_password=self.kafka_sasl_password,
            )
            if stray:
                raise ValueError(
                    f"{', '.join(stray)} take effect only with MEMSTREAM_KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT "
                    f"or SASL_SSL (it is {protocol})"
                )
        if protocol not in TLS_PROTOCOLS:
            stray = _set_variables(
                kafka_ssl_cafile=self.kafka_ssl_cafile,
                kafka_ssl_certfile=self.kafka_ssl_certfile,
                kafka_ssl_keyfile=self.kafka_ssl_keyfile,
                kafka_ssl_key_password=self.kafka_ssl_key_password,
            )
            if stray:
                raise ValueError(
                    f"{', '.join(stray)} take effect only with MEMSTREAM_KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL "
                    f"(it is {protocol})"
                )
        if self.kafka_ssl_certfile and not self.kafka_ssl_keyfile:
            raise ValueError(
                "MEMSTREAM_KAFKA_SSL_CERTFILE needs MEMSTREAM_KAFKA_SSL_KEYFILE (the same file when it holds both)"
            )
        if self.kafka_ssl_keyfile and not self.kafka_ssl_certfile:
            raise ValueError("MEMSTREAM_KAFKA_SSL_KEYFILE needs MEMSTREAM_KAFKA_SSL_CERTFILE")
        if self.kafka_ssl_key_password and not self.kafka_ssl_keyfile:
            raise ValueError("MEMSTREAM_KAFKA_SSL_KEY_PASSWORD needs MEMSTREAM_KAFKA_SSL_KEYFILE")
        if self.embedded_broker and protocol != "PLAINTEXT":
            raise ValueError(
                f"the embedded broker speaks PLAINTEXT only: MEMSTREAM_KAFKA_SECURITY_PROTOCOL={protocol} needs "
                "your own Kafka (MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS)"
            )
        return self

    @field_validator("tenant_rate_limits")
    @classmethod
    def _tenant_rate_limits(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_tenant_rate(entry)
        return value

    def tenant_rate(self, tenant_id: str) -> tuple[float, float]:
        """(requests/s, burst) of a tenant: its override in ``tenant_rate_limits``, else the default."""
        for entry in self.tenant_rate_limits:
            tenant, rate, burst = parse_tenant_rate(entry)
            if tenant == tenant_id:
                return rate, burst
        return self.tenant_rate_limit_per_s, self.tenant_rate_limit_burst

    @property
    def owner_database_url(self) -> SecretStr | None:
        return self.database_owner_url or self.database_url

    def require_database_url(self) -> str:
        return _required(self.database_url, "Postgres", "MEMSTREAM_DATABASE_URL")

    def require_owner_database_url(self) -> str:
        return _required(
            self.owner_database_url, "Postgres", "MEMSTREAM_DATABASE_OWNER_URL (or MEMSTREAM_DATABASE_URL)"
        )

    def require_redis_url(self) -> str:
        return _required(self.redis_url, "Redis", "MEMSTREAM_REDIS_URL")

    def require_kafka(self) -> str:
        return _required(self.kafka_bootstrap_servers, "Kafka", "MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS")

    def kafka_security(self) -> KafkaSecurity:
        """What every Kafka client spreads into its constructor (``KafkaSecurity.client_kwargs``);
        loads the TLS files (a KafkaSecurityError when they do not load)."""
        protocol = self.kafka_security_protocol
        if protocol == "PLAINTEXT":
            return PLAINTEXT
        context = None
        if protocol in TLS_PROTOCOLS:
            context = tls_context(
                cafile=self.kafka_ssl_cafile,
                certfile=self.kafka_ssl_certfile,
                keyfile=self.kafka_ssl_keyfile,
                key_password=self.kafka_ssl_key_password,
            )
        return KafkaSecurity(
            protocol=protocol,
            sasl_mechanism=self.kafka_sasl_mechanism,
            sasl_username=self.kafka_sasl_username,
            sasl_password=self.kafka_sasl_password,
            ssl_context=context,
        )


#: ``MEMSTREAM_*`` variables read by something else than ``Settings``: not misspelt settings.
#: (tests/unit/test_unknown_variables.py keeps this in step with the repository.)
OTHER_VARIABLES: frozenset[str] = frozenset(
    {
        # the SDK (clients/python), its MCP server and its ADK memory service
        "MEMSTREAM_BASE_URL",
        "MEMSTREAM_API_KEY",
        "MEMSTREAM_USER_ID",
        "MEMSTREAM_AGENT_ID",
        "MEMSTREAM_PROJECT_ID",
        "MEMSTREAM_SESSION_ID",
        # docker-compose.yml and deploy/postgres-init.sh: the database roles' and Valkey's passwords
        "MEMSTREAM_APP_PASSWORD",
        "MEMSTREAM_OWNER_PASSWORD",
        "MEMSTREAM_REDIS_PASSWORD",
        # the Makefile, the test suite and the benches
        "MEMSTREAM_BROWSER_TESTS",
        "MEMSTREAM_CHROMIUM",
        "MEMSTREAM_FAULT_REPORT",
        "MEMSTREAM_HYPOTHESIS_PROFILE",
        "MEMSTREAM_LOCOMO_DATA",
        "MEMSTREAM_SCHEMATHESIS_EXAMPLES",
        "MEMSTREAM_SCHEMATHESIS_SEED",
        "MEMSTREAM_UI_SCREENSHOTS",
    }
)

_PREFIX = "MEMSTREAM_"


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The ``MEMSTREAM_*`` variables of ``environ`` that set nothing (sorted), each with the
    variable of the closest setting, or None when none is close."""
    known = [name.upper() for name in Settings.model_fields]
    unknown: list[tuple[str, str | None]] = []
    for variable in sorted(environ):
        upper = variable.upper()  # pydantic-settings reads the environment in any case
        if not upper.startswith(_PREFIX) or upper in OTHER_VARIABLES:
            continue
        name = upper.removeprefix(_PREFIX)
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        unknown.append((variable, f"{_PREFIX}{close[0]}" if close else None))
    return unknown


def warn_unknown_variables(environ: Mapping[str, str]) -> None:
    """Log a WARNING for each ``MEMSTREAM_*`` variable that sets nothing (a misspelt one is
    otherwise silently ignored); called once at start by every memstream process."""
    for variable, closest in unknown_variables(environ):
        hint = f"; did you mean {closest}?" if closest else ""
        log.warning("%s is not a memstream setting and is ignored%s (docs/configuration.md)", variable, hint)


def parse_tenant_rate(entry: str) -> tuple[str, float, float]:
    """``tenant=rate`` (burst: twice the rate) or ``tenant=rate/burst`` -> (tenant, rate, burst)."""
    tenant, sep, spec = entry.partition("=")
    rate_text, _, burst_text = spec.partition("/")
    try:
        rate = float(rate_text)
        burst = float(burst_text) if burst_text else 2 * rate
    except ValueError:
        rate = burst = 0.0
    if not sep or not tenant.strip() or not rate > 0 or not burst >= 1:
        raise ValueError(f"tenant rate limit {entry!r}: expected 'tenant=rate' or 'tenant=rate/burst' (rate > 0)")
    return tenant.strip(), rate, burst


def _set_variables(**values: object) -> list[str]:
    """The environment variables of the settings given a value."""
    return [f"MEMSTREAM_{name.upper()}" for name, value in values.items() if value is not None]


def _required(value: SecretStr | str | None, what: str, variable: str) -> str:
    if not value:
        raise ConfigurationError(f"no {what} configured: set {variable} or run `memstream up`")
    return value.get_secret_value() if isinstance(value, SecretStr) else value


class ConfigurationError(MemstreamError):
    """A required setting is missing or inconsistent."""

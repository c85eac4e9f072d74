"""How a memstream process authenticates to Kafka: the one place settings become client arguments.

Every aiokafka client (the gateway's producer, the admin clients that create topics and watch
the cluster id, the CLI's DLQ and audit readers) spreads :meth:`KafkaSecurity.client_kwargs`
into its constructor, and the Faust apps get the same values as ``broker_credentials``
(``streams/app.py``), which Faust turns back into these arguments for its own clients. The
embedded broker speaks PLAINTEXT only, which is also the default here.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aiokafka.helpers import create_ssl_context
from pydantic import SecretStr

from memstream.errors import MemstreamError

KafkaSecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

SASL_PROTOCOLS: frozenset[str] = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
TLS_PROTOCOLS: frozenset[str] = frozenset({"SSL", "SASL_SSL"})


class KafkaSecurityError(MemstreamError):
    """The TLS material named by the Kafka security settings cannot be loaded."""


@dataclass(frozen=True)
class KafkaSecurity:
    """The security half of a Kafka client's configuration (the other half is the bootstrap
    servers). The password and the TLS context never appear in ``repr``."""

    protocol: KafkaSecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_context: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        user = f", user={self.sasl_username!r} ({self.sasl_mechanism})" if self.uses_sasl else ""
        return f"KafkaSecurity({self.protocol}{user})"

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @property
    def uses_tls(self) -> bool:
        return self.protocol in TLS_PROTOCOLS

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``AIOKafkaProducer``, ``AIOKafkaConsumer`` and ``AIOKafkaAdminClient``."""
        kwargs: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_tls:
            kwargs["ssl_context"] = self.ssl_context
        if self.uses_sasl:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = self.sasl_password.get_secret_value() if self.sasl_password else None
        return kwargs


#: The embedded broker's, and the default: no authentication, no TLS.
PLAINTEXT = KafkaSecurity()


def tls_context(
    *,
    cafile: Path | None,
    certfile: Path | None,
    keyfile: Path | None,
    key_password: SecretStr | None,
) -> ssl.SSLContext:
    """A client TLS context that verifies the broker (``cafile``, else the system's CAs) and,
    with ``certfile`` and ``keyfile``, presents a client certificate (mutual TLS)."""
    password = key_password.get_secret_value() if key_password else ""
    try:
        # A callable password: an encrypted key without one fails here instead of OpenSSL
        # prompting on a terminal the container does not have.
        context: ssl.SSLContext = create_ssl_context(
            cafile=cafile, certfile=certfile, keyfile=keyfile, password=lambda: password
        )
    except (ssl.SSLError, OSError) as exc:
        raise KafkaSecurityError(
            "cannot load the Kafka TLS files (MEMSTREAM_KAFKA_SSL_CAFILE, MEMSTREAM_KAFKA_SSL_CERTFILE, "
            f"MEMSTREAM_KAFKA_SSL_KEYFILE, MEMSTREAM_KAFKA_SSL_KEY_PASSWORD): {exc}"
        ) from exc
    return context

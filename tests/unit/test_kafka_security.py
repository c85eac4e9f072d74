"""Kafka security: settings that are coherent or refused, one translation into client
arguments, and every Kafka client of ours built with it (no broker needed)."""

from __future__ import annotations

import ast
import datetime
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from pydantic import SecretStr, ValidationError

from agents_gateway import producer as gateway_producer
from memstream.kafka_security import PLAINTEXT, KafkaSecurity, KafkaSecurityError
from memstream.settings import Settings
from ops import audit_follow, dlq
from ops.stack.state import settings_env
from schemas.codec import turn_event_codec
from schemas.topics import AUDIT, COMPACTION, DLQ, DLQ_SOURCE_TOPIC, FACTS, RETRY, TURNS
from streams import broker_reset, topics
from streams.app import broker_credentials, faust_app

ROOT = Path(__file__).resolve().parents[2]
SASL = {"kafka_sasl_mechanism": "SCRAM-SHA-512", "kafka_sasl_username": "gateway", "kafka_sasl_password": "pw-42"}


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


# --- settings: coherent, or a startup error naming the variable ---------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kafka_security_protocol": "SASL_SSL"}, "MEMSTREAM_KAFKA_SASL_MECHANISM, MEMSTREAM_KAFKA_SASL_USERNAME, "
         "MEMSTREAM_KAFKA_SASL_PASSWORD"),
        ({"kafka_security_protocol": "SASL_PLAINTEXT", **SASL, "kafka_sasl_password": None},
         "SASL_PLAINTEXT needs MEMSTREAM_KAFKA_SASL_PASSWORD"),
        ({"kafka_sasl_username": "gateway"}, "MEMSTREAM_KAFKA_SASL_USERNAME take effect only with"),
        ({"kafka_security_protocol": "SSL", **SASL}, "MEMSTREAM_KAFKA_SASL_MECHANISM"),
        ({"kafka_security_protocol": "SASL_SSL", **SASL, "kafka_sasl_mechanism": "GSSAPI"}, "kafka_sasl_mechanism"),
        ({"kafka_security_protocol": "TLS"}, "kafka_security_protocol"),
        ({"kafka_security_protocol": "SSL", "kafka_ssl_cafile": "/no/such/ca.pem"},
         "MEMSTREAM_KAFKA_SSL_CAFILE: no file at /no/such/ca.pem"),
        ({"embedded_broker": True, "kafka_security_protocol": "SASL_SSL", **SASL}, "PLAINTEXT only"),
    ],
    ids=["sasl-without-credentials", "sasl-without-password", "sasl-user-on-plaintext", "sasl-on-ssl",
         "unsupported-mechanism", "unknown-protocol", "missing-ca-file", "embedded-broker"],
)  # fmt: skip
def test_incoherent_security_is_refused_naming_the_variable(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        settings(**values)
    assert "pw-42" not in str(caught.value)  # an error never prints the password


def test_tls_files_need_tls_and_each_other(tls: TlsFiles) -> None:
    with pytest.raises(ValidationError, match="MEMSTREAM_KAFKA_SSL_CAFILE take effect only with"):
        settings(kafka_ssl_cafile=tls.ca)
    with pytest.raises(ValidationError, match="MEMSTREAM_KAFKA_SSL_CERTFILE needs MEMSTREAM_KAFKA_SSL_KEYFILE"):
        settings(kafka_security_protocol="SSL", kafka_ssl_certfile=tls.cert)
    with pytest.raises(ValidationError, match="MEMSTREAM_KAFKA_SSL_KEYFILE needs MEMSTREAM_KAFKA_SSL_CERTFILE"):
        settings(kafka_security_protocol="SSL", kafka_ssl_keyfile=tls.key)
    with pytest.raises(ValidationError, match="MEMSTREAM_KAFKA_SSL_KEY_PASSWORD needs MEMSTREAM_KAFKA_SSL_KEYFILE"):
        settings(kafka_security_protocol="SSL", kafka_ssl_key_password="x")


def test_the_environment_configures_a_managed_service(monkeypatch: pytest.MonkeyPatch, tls: TlsFiles) -> None:
    for name, value in {
        "KAFKA_BOOTSTRAP_SERVERS": "b-1.example:9096",
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
        "KAFKA_SASL_USERNAME": "memstream-gateway",
        "KAFKA_SASL_PASSWORD": "pw-42",
        "KAFKA_SSL_CAFILE": str(tls.ca),
    }.items():
        monkeypatch.setenv(f"MEMSTREAM_{name}", value)
    loaded = Settings()
    assert "pw-42" not in repr(loaded) and "pw-42" not in repr(loaded.kafka_security())
    kwargs = loaded.kafka_security().client_kwargs()
    assert kwargs["security_protocol"] == "SASL_SSL" and kwargs["sasl_mechanism"] == "SCRAM-SHA-256"
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("memstream-gateway", "pw-42")
    assert kwargs["ssl_context"].get_ca_certs()[0]["subject"] == ((("commonName", "test-ca"),),)


def test_memstream_up_hands_the_security_settings_to_its_processes(
    monkeypatch: pytest.MonkeyPatch, tls: TlsFiles
) -> None:
    original = settings(kafka_bootstrap_servers="k:9096", kafka_security_protocol="SASL_SSL", **SASL,
                        kafka_ssl_cafile=tls.ca)  # fmt: skip
    for name, value in settings_env(original).items():
        monkeypatch.setenv(name, value)
    assert Settings() == original


# --- one translation: aiokafka arguments, and the same through Faust's credentials --------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_each_protocol_and_mechanism_maps_to_aiokafka_and_faust_alike(protocol: str, mechanism: str) -> None:
    sasl = {**SASL, "kafka_sasl_mechanism": mechanism} if protocol.startswith("SASL") else {}
    security = settings(kafka_security_protocol=protocol, **sasl).kafka_security()
    kwargs = security.client_kwargs()
    assert kwargs["security_protocol"] == protocol
    assert isinstance(kwargs.get("ssl_context"), ssl.SSLContext) is (protocol in ("SSL", "SASL_SSL"))
    if protocol.startswith("SASL"):
        assert kwargs["sasl_mechanism"] == mechanism
        assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("gateway", "pw-42")
    else:
        assert not any(key.startswith("sasl") for key in kwargs)
    # Faust hands its credentials to aiokafka through this function: the same arguments.
    through_faust = dict(credentials_to_aiokafka_auth(broker_credentials(security), None))
    assert through_faust == ({"ssl_context": None, **kwargs} if protocol == "SASL_PLAINTEXT" else kwargs)


def test_plaintext_is_the_default_and_the_embedded_stack_is_unchanged() -> None:
    security = settings(kafka_bootstrap_servers="127.0.0.1:9092", embedded_broker=True).kafka_security()
    assert security is PLAINTEXT
    assert security.client_kwargs() == {"security_protocol": "PLAINTEXT"}  # aiokafka's own default
    assert broker_credentials(security) is None  # Faust's own default


def test_client_certificates_load_and_a_wrong_key_password_is_named(tls: TlsFiles) -> None:
    mutual = {"kafka_security_protocol": "SSL", "kafka_ssl_cafile": tls.ca, "kafka_ssl_certfile": tls.cert}
    security = settings(**mutual, kafka_ssl_keyfile=tls.encrypted_key, kafka_ssl_key_password="key-pw").kafka_security()
    assert security.client_kwargs()["ssl_context"].verify_mode == ssl.CERT_REQUIRED
    assert settings(**mutual, kafka_ssl_keyfile=tls.key).kafka_security().ssl_context is not None
    for password in ("wrong", None):  # and never an OpenSSL prompt on the terminal
        configured = settings(**mutual, kafka_ssl_keyfile=tls.encrypted_key, kafka_ssl_key_password=password)
        with pytest.raises(KafkaSecurityError, match="MEMSTREAM_KAFKA_SSL_KEY_PASSWORD"):
            configured.kafka_security()


# --- every construction site passes them -----------------------------------------------------

SECURE = KafkaSecurity(
    protocol="SASL_SSL",
    sasl_mechanism="SCRAM-SHA-256",
    sasl_username="u",
    sasl_password=SecretStr("p"),
    ssl_context=ssl.create_default_context(),
)


class FakeClient:
    """Stands in for AIOKafkaProducer, AIOKafkaConsumer and AIOKafkaAdminClient; records its kwargs."""

    site = ""
    built: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        FakeClient.built.append((self.site, kwargs))

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def close(self) -> None: ...
    async def list_topics(self) -> list[str]:
        return [TURNS, DLQ, AUDIT, FACTS, COMPACTION, RETRY]

    async def describe_cluster(self) -> dict[str, str]:
        return {"cluster_id": "c-1"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set()

    async def committed(self, tp: Any) -> int:
        return 5

    def assign(self, tps: Any) -> None: ...
    def seek(self, tp: Any, offset: int) -> None: ...
    async def getmany(self, *tps: Any, timeout_ms: int) -> dict[Any, Any]:
        return {}

    async def send(self, *args: Any, **kwargs: Any) -> Any:
        return _done()  # fmt: skip


async def _done() -> None:
    return None


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    FakeClient.built = []
    for module, name in [
        (gateway_producer, "AIOKafkaProducer"),
        (topics, "AIOKafkaAdminClient"),
        (broker_reset, "AIOKafkaAdminClient"),
        (audit_follow, "AIOKafkaConsumer"),
        (dlq, "AIOKafkaConsumer"),
        (dlq, "AIOKafkaProducer"),
    ]:
        site = f"{module.__name__}.{name}"
        monkeypatch.setattr(module, name, type(name, (FakeClient,), {"site": site}))
    yield FakeClient.built


def secured(kwargs: dict[str, Any]) -> bool:
    return all(kwargs.get(key) == value for key, value in SECURE.client_kwargs().items())


async def test_every_client_of_ours_is_built_with_the_security_settings(
    built: list[tuple[str, dict[str, Any]]],
) -> None:
    producer = gateway_producer.TurnProducer(
        "k:9096", security=SECURE, codec=turn_event_codec(), timeout_s=1, max_request_bytes=1 << 20,
        watch_cluster=True, topic_partitions=3,
    )  # fmt: skip
    await producer._started()  # ensure_topics' admin, then the producer
    assert producer._watch is not None
    await producer._watch.check()  # the cluster-id watch's admin
    await producer.close()
    await broker_reset._ask_cluster_id("k:9096", SECURE)  # wait_for_cluster_id's
    follower = audit_follow.AuditFollower("k:9096", security=SECURE, group_id="g")
    await follower._rebuild_high_water({audit_follow.TopicPartition(AUDIT, 0)})  # its second reader
    await dlq.read_dead_letters("k:9096", security=SECURE)
    letter = dlq.DeadLetter(partition=0, offset=1, key=b"k", value=b"v", headers={DLQ_SOURCE_TOPIC: TURNS})
    await dlq.replay_dead_letters("k:9096", [letter], security=SECURE)
    assert [site for site, _ in built] == [
        "streams.topics.AIOKafkaAdminClient",  # the gateway's ensure_topics
        "agents_gateway.producer.AIOKafkaProducer",
        "streams.broker_reset.AIOKafkaAdminClient",  # the gateway's cluster-id watch
        "streams.broker_reset.AIOKafkaAdminClient",  # the worker's wait_for_cluster_id
        "ops.audit_follow.AIOKafkaConsumer",
        "ops.audit_follow.AIOKafkaConsumer",
        "ops.dlq.AIOKafkaConsumer",
        "ops.dlq.AIOKafkaProducer",
    ]
    assert all(secured(kwargs) for _, kwargs in built), built


def test_the_faust_apps_get_the_security_settings(tmp_path: Path) -> None:
    configured = settings(
        data_dir=tmp_path, kafka_bootstrap_servers="k:9096", kafka_security_protocol="SASL_SSL", **SASL,
        topic_replication_factor=3,
    )  # fmt: skip
    app = faust_app(configured, app_id="security-probe")
    # What Faust's consumers and producers are built with (faust.transport.drivers.aiokafka).
    auth = credentials_to_aiokafka_auth(app.conf.broker_credentials, app.conf.ssl_context)
    assert auth["security_protocol"] == "SASL_SSL" and auth["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (auth["sasl_plain_username"], auth["sasl_plain_password"]) == ("gateway", "pw-42")
    assert isinstance(auth["ssl_context"], ssl.SSLContext)
    # The one topic Faust creates itself, its leader topic, gets the cluster's replication factor.
    assert app.conf.topic_replication_factor == configured.topic_replication_factor


CLIENTS = {"AIOKafkaProducer", "AIOKafkaConsumer", "AIOKafkaAdminClient"}


def test_no_kafka_client_is_built_without_the_security_arguments() -> None:
    """A new construction site must spread ``security.client_kwargs()`` (or, for a Faust app,
    pass ``broker_credentials``): checked in the source of every package that talks to Kafka."""
    checked, unsecured = [], []
    for package in ("agents_gateway", "streams", "sinks", "ops", "memstream", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                keywords = node.keywords
                if name in CLIENTS:
                    ok = any(k.arg is None and "client_kwargs" in ast.unparse(k.value) for k in keywords)
                elif name == "App" and ast.unparse(func) == "faust.App":
                    ok = any(k.arg == "broker_credentials" for k in keywords)
                else:
                    continue
                checked.append(site := f"{path.relative_to(ROOT)}:{node.lineno}")
                if not ok:
                    unsecured.append(site)
    assert not unsecured, f"Kafka clients built without the security settings: {unsecured}"
    assert len(checked) >= 9, checked  # the eight sites above, the Faust app


# --- TLS material made for the test ------------------------------------------------------------


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path
    encrypted_key: Path


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A self-signed CA whose certificate doubles as the client's, with its key in the clear
    and encrypted (password ``key-pw``)."""
    pytest.importorskip("cryptography")  # google-adk's, in the dev extra
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory = tmp_path_factory.mktemp("kafka-tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    files = TlsFiles(directory / "ca.pem", directory / "client.pem", directory / "client.key", directory / "enc.key")
    pem = cert.public_bytes(serialization.Encoding.PEM)
    files.ca.write_bytes(pem)
    files.cert.write_bytes(pem)
    pkcs8 = serialization.PrivateFormat.PKCS8
    files.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption()))
    encrypted = serialization.BestAvailableEncryption(b"key-pw")
    files.encrypted_key.write_bytes(key.private_bytes(serialization.Encoding.PEM, pkcs8, encrypted))
    return files

"""An audit-log consumer of your own: appends every tenant's changes to ``<dir>/<tenant>.jsonl``.

    python examples/audit_consumer.py --bootstrap-servers localhost:9092 --out audit/ --group siem-export

It reads ``memstream.audit.v1`` in its own consumer group (so it has its own position and
never takes records from another consumer), commits only after a record is written and
flushed, and skips records the relay published twice, so each change is in the files once
and in order per tenant. Stop it with Ctrl-C; run it again and it continues where it stopped.
A Kafka that asks for TLS or SASL is reached with the memstream processes' own variables
(``MEMSTREAM_KAFKA_SECURITY_PROTOCOL`` and the others of docs/configuration.md).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path
from typing import Any

from memstream.settings import Settings
from ops.audit_follow import AuditFollower
from ops.audit_tail import as_json_line


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--group", default="audit-consumer-example")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    async def append(record: dict[str, Any]) -> None:
        with (args.out / f"{record['tenant_id']}.jsonl").open("ab") as f:
            f.write(as_json_line(record))

    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    security = Settings().kafka_security()
    follower = AuditFollower(args.bootstrap_servers, security=security, group_id=args.group, from_beginning=True)
    stats = await follower.run(append, stop=stop)
    print(f"{stats.handled} records written, {stats.repeats_skipped} repeats skipped")


if __name__ == "__main__":
    asyncio.run(main())

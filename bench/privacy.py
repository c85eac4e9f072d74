"""Cost of the privacy filter: ``python -m bench.privacy [--kib N] [module ...]``.

Prints one JSON object. For each module (default ``memstream.privacy``; name an older copy to
compare), the median of three runs of ``redact``, in CPU time of this process, the modules'
runs interleaved so that a busy machine skews them alike:

- ``short_turns_us``: µs per turn over the user and assistant turns of ``bench.conversation``
  (about 120 characters each), with the default policy (secrets only);
- ``all_turns_us``: µs per turn over all 45 turns (tool outputs of up to 30,000 characters);
- ``all_turns_us_per_kb``: the same per KB of text;
- ``…_all_detectors``: the same with e-mail and phone redaction on too;
- ``adversarial_us_per_kb``: for each adversarial family (what a detector looks for, repeated
  so that its pattern can start everywhere: ``eyJ_a``, ``AKIA``, ``-----BEGIN``, …), every
  detector on, µs per KB of ``--kib`` KiB (default 64) of it (the third red team's forms too:
  ``<password>``, ``password ``, name/value pairs, YAML blocks, ``A_KEY=``, .pgpass,
  ``identified by``, webhooks, ``a%40``, numbers with other separators, placeholders). Linear work makes this
  independent of the size: run with ``--kib 16`` and ``--kib 256`` to see it stay put
  (quadratic work grows 16-fold from one to the other).
"""

from __future__ import annotations

import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.conversation import build_conversation

#: (name, unit): the adversarial text is ``unit`` repeated.
ADVERSARIAL: tuple[tuple[str, str], ...] = (
    ("eyJ_a", "eyJ_a"),
    ("AKIA", "AKIA"),
    ("ghp_", "ghp_"),
    ("xoxb-", "xoxb-"),
    ("-----BEGIN", "-----BEGIN "),
    ("private key dashes", "private key -----"),
    ("password=", "password="),
    ("password: ", "password: "),
    ('password="', 'password="a'),
    ("PGPASSWORD", "PGPASSWORD"),
    ("backslashes", "\\"),
    ("://a:", "://a:"),
    ("@", "@"),
    ("a@", "a@"),
    ("digits and spaces", "1 "),
    ("digits and dashes", "1-"),
    ("digits and tabs", "12\t"),
    ("123-45-", "123-45-"),
    ("AB 12 ", "AB 12 "),
    ("+1 ", "+1 "),
    ("bearer ", "bearer "),
    ("authorization: ", "authorization: "),
    ("cookie: ", "cookie: "),
    ("--token ", "--token "),
    ("mysql -p", "mysql -p"),
    ("full-width digits", "\uff11"),
    ("<password>", "<password>"),
    ("password ", "password "),
    ("name/value", 'name="password" '),
    ("yaml block", "password: |\n  a\n"),
    ("A_KEY=", "A_KEY="),
    ("h:5432:d:u:", "h:5432:d:u:"),
    ("identified by ", "identified by "),
    ("hooks", "hooks.slack.com/services/"),
    ("a%40", "a%40"),
    ("4_", "4_"),
    ("123/45/", "123/45/"),
    ("[REDACTED:x]", "[REDACTED:x]"),
)

_POLICY_ALL = {"redact_email": True, "redact_phone": True}


def one_run(redact: Callable[[str], Any], texts: list[str], repeat: int) -> float:
    """CPU seconds per text."""
    started = time.process_time()
    for _ in range(repeat):
        for text in texts:
            redact(text)
    return (time.process_time() - started) / (repeat * len(texts))


def main() -> None:
    args = sys.argv[1:]
    kib = 64
    if "--kib" in args:
        at = args.index("--kib")
        kib = int(args[at + 1])
        del args[at : at + 2]
    names = args or ["memstream.privacy"]
    modules = [importlib.import_module(name) for name in names]
    plain = [module.redact for module in modules]
    everything = [(lambda m: lambda text: m.redact(text, m.PrivacyPolicy(**_POLICY_ALL)))(module) for module in modules]
    turns = build_conversation()
    every = [t.content for t in turns]
    short = [t.content for t in turns if t.role != "tool"]
    every_kb = sum(map(len, every)) / len(every) / 1024
    size = kib * 1024
    rows: list[tuple[str, list[str], int, float, bool]] = [
        ("short_turns_us", short, 400, 1.0, False),
        ("all_turns_us", every, 4, 1.0, False),
        ("all_turns_us_per_kb", every, 4, every_kb, False),
        ("short_turns_us_all_detectors", short, 400, 1.0, True),
        ("all_turns_us_all_detectors", every, 4, 1.0, True),
    ]
    for label, unit in ADVERSARIAL:
        rows.append((f"adversarial:{label}", [(unit * (size // len(unit) + 1))[:size]], 1, size / 1024, True))
    out: dict[str, Any] = {
        "size_kib": kib,
        "short_turn_chars": round(sum(map(len, short)) / len(short)),
        "turns": len(every),
        "modules": {name: {"adversarial_us_per_kb": {}} for name in names},
    }
    for label, texts, repeat, per, all_detectors in rows:
        runs: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(3):
            for name, redact in zip(names, everything if all_detectors else plain, strict=True):
                runs[name].append(one_run(redact, texts, repeat) * 1e6 / per)
        for name in names:
            value = round(statistics.median(runs[name]), 1)
            if label.startswith("adversarial:"):
                out["modules"][name]["adversarial_us_per_kb"][label.split(":", 1)[1]] = value
            else:
                out["modules"][name][label] = value
    for name in names:
        adversarial = out["modules"][name]["adversarial_us_per_kb"]
        out["modules"][name]["adversarial_worst_us_per_kb"] = max(adversarial.values())
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

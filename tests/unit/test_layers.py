"""The rooms import one way (``make lint`` runs the contract; these pin what it is for)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gateway_does_not_load_faust_nor_the_operator_commands() -> None:
    """Topic names are part of the event contract (``schemas/topics.py``): reading them must
    not start Faust's machinery in the gateway process."""
    code = (
        "import sys, agents_gateway.app; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'faust', 'mode', 'ops', 'bench'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_layers_contract_names_every_room_top_to_bottom() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers, sdk = config["contracts"]
    assert layers["type"] == "layers"
    assert layers["layers"] == ["bench", "ops", "agents_gateway", "streams", "sinks", "memstream", "schemas"]
    assert set(config["root_packages"]) == {*layers["layers"], "memstream_client"}
    # The SDK (clients/python) is its own distribution: it may import none of the server's rooms.
    assert sdk["type"] == "forbidden"
    assert sdk["source_modules"] == ["memstream_client"]
    assert set(sdk["forbidden_modules"]) == set(layers["layers"])

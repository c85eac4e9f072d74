"""``python -m ops.config_docs [--check]``: the configuration reference, rendered from ``Settings``.

``docs/configuration.md`` lists every setting with its environment variable, type, default and
meaning (the field's ``description``), grouped by the ``# --- section ---`` comments of
``memstream/settings.py``. The page is generated, never edited by hand: change a setting, then
run this module; ``--check`` (and ``tests/unit/test_configuration_docs.py``) fails while the
committed page and the settings disagree.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import textwrap
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from memstream.settings import Settings

#: Where the page lives, relative to the repository root (the working directory of `make`).
DOCS_PATH = Path("docs/configuration.md")
REGENERATE = "python -m ops.config_docs"

_SECTION = re.compile(r"^\s*# ---\s+(?P<title>.*?)\s*-*\s*$")

_INTRO = f"""\
# Configuration reference

<!-- Generated from memstream/settings.py by `{REGENERATE}`: edit the settings, not this page. -->

Every memstream process (`memstream up`, `worker`, `gateway` and the other commands) reads its
settings once, at start, from environment variables named `MEMSTREAM_` and the setting's name
(in any case; upper case here). `memstream up` hands its settings, with the addresses of the
services it started, to the processes it runs. Booleans are `true` or `false`, lists are JSON
(`'["a", "b"]'`), and names ending in `_s` are seconds. `unset` means no value; a secret's
value is never shown here.
"""

_TYPE_NAMES: dict[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    SecretStr: "secret",
}


@dataclass(frozen=True)
class Section:
    """One ``# --- title ---`` group of settings, in the order of the settings file."""

    title: str
    fields: tuple[str, ...]


def env_name(name: str, field: FieldInfo, model: type[BaseSettings] = Settings) -> str:
    """The environment variable that sets ``name`` (pydantic-settings: the prefix and the field's
    name, matched in any case; written here in upper case)."""
    if field.validation_alias is not None or field.alias is not None:
        raise ValueError(f"{name} has an alias: teach ops/config_docs.py how pydantic-settings names it")
    prefix = str(model.model_config.get("env_prefix", ""))
    return f"{prefix}{name}".upper()


def sections(model: type[BaseSettings] = Settings) -> list[Section]:
    """The settings grouped by the ``# --- title ---`` comments above them in the class body."""
    lines, _ = inspect.getsourcelines(model)
    source = textwrap.dedent("".join(lines))
    body = ast.parse(source).body[0]
    if not isinstance(body, ast.ClassDef):
        raise ValueError(f"{model.__name__}: expected a class definition")
    starts = {
        node.lineno: node.target.id
        for node in body.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id in model.model_fields
    }
    found: list[tuple[str, list[str]]] = []
    for lineno, line in enumerate(source.splitlines(), start=1):
        if match := _SECTION.match(line):
            found.append((match["title"], []))
        elif (name := starts.get(lineno)) is not None:
            if not found:
                raise ValueError(f"setting {name} comes before any '# --- section ---' comment")
            found[-1][1].append(name)
    listed = [name for _, names in found for name in names]
    missing = [name for name in model.model_fields if name not in listed]
    if missing:
        raise ValueError(f"settings not declared in {model.__name__}'s own body: {', '.join(missing)}")
    return [Section(title, tuple(names)) for title, names in found if names]


def render(model: type[BaseSettings] = Settings) -> str:
    """The whole page, Markdown, ending in one newline."""
    parts = [_INTRO]
    for section in sections(model):
        parts.append(f"\n## {section.title[:1].upper()}{section.title[1:]}\n")
        parts.append("\n| Variable | Type | Default | Meaning |\n|---|---|---|---|\n")
        for name in section.fields:
            field = model.model_fields[name]
            cells = (f"`{env_name(name, field, model)}`", _type(field), _default(field), _meaning(name, field))
            parts.append("| " + " | ".join(_cell(c) for c in cells) + " |\n")
    return "".join(parts)


def _meaning(name: str, field: FieldInfo) -> str:
    if not field.description or not field.description.strip():
        raise ValueError(f"setting {name} has no description: add description= to its Field in memstream/settings.py")
    return " ".join(field.description.split())


def _type(field: FieldInfo) -> str:
    annotation, optional = _unwrap_optional(field.annotation)
    text = _type_name(annotation)
    bounds = []
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            bounds.append(f"≥ {item.ge}")
        elif isinstance(item, annotated_types.Gt):
            bounds.append(f"> {item.gt}")
        elif isinstance(item, annotated_types.Le):
            bounds.append(f"≤ {item.le}")
        elif isinstance(item, annotated_types.Lt):
            bounds.append(f"< {item.lt}")
    if bounds:
        text += ", " + ", ".join(bounds)
    return text + (", optional" if optional else "")


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, True); anything else -> (itself, False)."""
    args = get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return annotation, False


def _type_name(annotation: Any) -> str:
    if annotation in _TYPE_NAMES:
        return _TYPE_NAMES[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"list of {_type_name(args[0])}s (JSON)"
    raise TypeError(f"no name for the type {annotation!r}: teach ops/config_docs.py")


def _default(field: FieldInfo) -> str:
    annotation, _ = _unwrap_optional(field.annotation)
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if annotation is SecretStr:
        return "set, not shown"  # a secret's value never reaches the page
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, tuple | list):
        return "`[" + ", ".join(f'"{v}"' for v in value) + "]`"
    if isinstance(value, str) and not value:
        return "empty"
    return f"`{value}`"


def _cell(text: str) -> str:
    """A table cell: pipes escaped (also inside code spans, as GitHub's tables require)."""
    return text.replace("|", "\\|")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description="Render docs/configuration.md from Settings.")
    parser.add_argument("--check", action="store_true", help="fail if the page differs from the settings")
    parser.add_argument("--out", type=Path, default=DOCS_PATH, help=f"the page (default: {DOCS_PATH})")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != page:
            print(f"{args.out} does not match memstream/settings.py: run `{REGENERATE}`", file=sys.stderr)
            return 1
        print(f"{args.out} matches the settings")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

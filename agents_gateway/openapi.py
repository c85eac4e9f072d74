"""The OpenAPI document, made to say what the gateway enforces (schemathesis checks it:
``tests/integration/test_openapi_conformance.py``).

FastAPI writes most of it from the routes and models; this adds what they cannot say:

- the API-key security schemes, on every ``/v1`` operation;
- the error answers any ``/v1`` operation can give before or beside its own logic (the guard's
  400/408/413/415/431, authentication's 401/403/429, validation's 422, a store's 503), in the
  one error shape;
- that no string anywhere may hold a control character (``schemas/turns.py``): a pattern on
  every free string of a request — query, path and body — and, on one-line fields (tags, tool
  names, metadata keys), no tab or line break either. Without it, the document called
  requests valid that the gateway refuses.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

#: A string without control characters (but tab, LF, CR). (Unpaired surrogates are refused
#: too, but a pattern cannot name them in the regex dialects validators use; UTF-8 cannot carry
#: them anyway — only a JSON escape like ``\ud800`` can.)
TEXT_PATTERN = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$"
#: The same, on one line: no tab or line break either.
ONE_LINE_PATTERN = "^[^\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029]*$"
#: Text (one line) that is not only whitespace: at least one other character somewhere.
_TEXT = "\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F"
_LINE = "\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029"
TEXT_NONBLANK_PATTERN = f"^[^{_TEXT}]*[^\\s{_TEXT}][^{_TEXT}]*$"
ONE_LINE_NONBLANK_PATTERN = f"^[^{_LINE}]*[^\\s{_LINE}][^{_LINE}]*$"

SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer msk_..."},
    "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
}

#: Answers every /v1 operation may give, whatever it does.
COMMON_ERRORS: dict[str, str] = {
    "400": "Malformed request (a body that is not valid JSON)",
    "401": "No, or an invalid, API key",
    "403": "Missing scope, another tenant or agent named, or a tenant-wide operation with an agent's key",
    "404": "Nothing there (a path whose parameters name nothing the gateway serves)",
    "408": "The request (headers or body) did not arrive in time",
    "413": "Body over its cap (4 MiB for /v1/turns, 64 KiB elsewhere)",
    "415": "A body that is not application/json",
    "422": "Invalid parameters, naming each",
    "429": "Rate limit exceeded (the key's, the tenant's or the address's; see Retry-After)",
    "431": "Request headers over their cap",
    "503": "A store is unavailable (see Retry-After)",
}


def constrain_strings(schema: dict[str, Any], *, one_line: bool = False) -> None:
    """Give every free string in ``schema`` (nested in anyOf/oneOf/allOf, items, additional
    properties) the control-character pattern; a string with a pattern, format, enum or const
    of its own already says what it takes."""
    for branch in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(branch, ()):
            constrain_strings(sub, one_line=one_line)
    if isinstance(schema.get("items"), dict):
        constrain_strings(schema["items"], one_line=one_line)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        constrain_strings(extra)
        schema.setdefault("propertyNames", {}).setdefault("pattern", ONE_LINE_PATTERN)
    if schema.get("type") == "string" and not {"pattern", "format", "enum", "const"} & schema.keys():
        schema["pattern"] = ONE_LINE_PATTERN if one_line else TEXT_PATTERN
    # pydantic writes a bound it cannot place (an integer with a before-validator) as its own
    # keyword; JSON Schema's are these.
    for theirs, ours in (("ge", "minimum"), ("le", "maximum"), ("gt", "exclusiveMinimum"), ("lt", "exclusiveMaximum")):
        if theirs in schema:
            schema[ours] = schema.pop(theirs)


def model_properties(model: type[BaseModel], schema: dict[str, Any], one_line: Iterable[str]) -> None:
    """``constrain_strings`` over a request model's properties (its one-line fields on one line)."""
    single = set(one_line)
    for name, prop in schema.get("properties", {}).items():
        constrain_strings(prop, one_line=name in single)


def complete(document: dict[str, Any]) -> dict[str, Any]:
    """Security schemes, the common error answers and string patterns on every /v1 operation."""
    components = document.setdefault("components", {})
    components["securitySchemes"] = SECURITY_SCHEMES
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
    for path, operations in document.get("paths", {}).items():
        if not path.startswith("/v1/"):
            continue
        for operation in operations.values():
            operation["security"] = [{name: []} for name in SECURITY_SCHEMES]
            responses = operation.setdefault("responses", {})
            for status, description in COMMON_ERRORS.items():
                responses.setdefault(status, {"description": description, "content": error})
            for parameter in operation.get("parameters", ()):
                constrain_strings(parameter.get("schema", {}))
    return document

"""memstream-client: the Python SDK of the memstream gateway (long-term memory for AI agents).

    from memstream_client import Memstream

    with Memstream(api_key="msk_...") as client:
        client.turns.publish({"agent_id": "a1", "user_id": "u1", "session_id": "s1",
                              "role": "user", "content": "I prefer dark mode"})
        print(client.context.get("u1", "what theme?", session_id="s1").prompt)

``AsyncMemstream`` is the same API for asyncio. Errors are in ``memstream_client.errors``,
request and answer models in ``memstream_client.models``.
"""

from memstream_client.async_client import AsyncMemstream
from memstream_client.client import Memstream
from memstream_client.config import ClientOptions
from memstream_client.errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    InvalidArgumentError,
    MemstreamError,
    MissingAPIKeyError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnavailableError,
    UnexpectedResponseError,
    ValidationError,
)
from memstream_client.models import ToolEvent, Turn
from memstream_client.version import VERSION

__version__ = VERSION

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncMemstream",
    "AuthenticationError",
    "BadRequestError",
    "ClientOptions",
    "ConflictError",
    "InternalServerError",
    "InvalidArgumentError",
    "Memstream",
    "MemstreamError",
    "MissingAPIKeyError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ToolEvent",
    "Turn",
    "UnavailableError",
    "UnexpectedResponseError",
    "ValidationError",
    "__version__",
]

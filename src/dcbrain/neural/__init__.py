"""Neural: the in-process signal bus for registration, tool dispatch and user new input."""

from dcbrain.neural.bus import (
    ALL_SIGNALS,
    DEFAULT_REQUEST_TIMEOUT,
    USER_INPUT_SIGNAL,
    Handler,
    Neural,
    Responder,
    Signal,
    Subscription,
)

__all__ = [
    "ALL_SIGNALS",
    "DEFAULT_REQUEST_TIMEOUT",
    "USER_INPUT_SIGNAL",
    "Handler",
    "Neural",
    "Responder",
    "Signal",
    "Subscription",
]

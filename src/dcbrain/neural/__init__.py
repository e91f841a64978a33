"""Neural: the mailbox of a user's new input to a running run."""

from dcbrain.neural.bus import USER_INPUT_SIGNAL, Neural

__all__ = ["USER_INPUT_SIGNAL", "Neural"]

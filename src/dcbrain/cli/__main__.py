"""``python -m dcbrain.cli`` runs the ``dcbrain`` command."""

from dcbrain.cli import main

main()

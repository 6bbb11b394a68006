"""``python -m commsim``: the ``commsim`` command, as ``python -m commsim.cli`` runs it."""

from commsim.cli import main

main()

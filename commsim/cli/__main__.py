"""``python -m commsim.cli``: the ``commsim`` command."""

from commsim.cli import main

main()

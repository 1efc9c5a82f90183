"""``python -m sparsejac``: the same as the ``sparsejac`` command."""

from sparsejac.cli import main

raise SystemExit(main())

"""CLI subcommands. Each module exposes ``register(subparsers)``, adding a parser whose ``func``
takes the parsed arguments and returns an exit status."""

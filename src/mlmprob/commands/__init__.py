"""CLI subcommands: each module's ``register(subparsers)`` adds a parser whose ``func(args)`` gives an exit status."""

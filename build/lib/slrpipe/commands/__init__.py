"""CLI subcommands, one module per workflow step (``add_arguments(parser)`` + ``run(args)``)."""

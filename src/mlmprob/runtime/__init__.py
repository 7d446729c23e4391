"""The runtime layer every command uses: device and dtype choice, streamed inputs, shards, result
writers with resume and a writer lock, process pools over devices, Ray, merging shard outputs, and
the one runner of the streaming commands (:mod:`.command`).

Nothing here imports the algorithms or the commands; they import it."""

from ..lazy import exports

# imported from their modules on first use: the command line's parsers read constants of this layer
# (``FORMATS``) without importing torch
__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "describe": ".device",
        "resolve_device": ".device",
        "resolve_dtype": ".device",
        "FORMATS": ".inputs",
        "Record": ".inputs",
        "iter_records": ".inputs",
        "read_records": ".inputs",
        "Shard": ".shard",
        "parse_shard": ".shard",
    },
)

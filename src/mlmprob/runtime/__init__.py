"""The runtime layer every command uses: device and dtype choice, streamed inputs, shards, result
writers with resume and a writer lock, process pools over devices, Ray, merging shard outputs, and
the one runner of the streaming commands (:mod:`.command`).

Nothing here imports the algorithms or the commands; they import it.
"""

from .device import describe, resolve_device, resolve_dtype
from .inputs import FORMATS, Record, count_records, iter_records, read_records
from .shard import Shard, parse_shard

__all__ = ["describe", "resolve_device", "resolve_dtype", "FORMATS", "Record", "count_records", "iter_records",
           "read_records", "Shard", "parse_shard"]

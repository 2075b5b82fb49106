"""SLR data: the teacher (k*, v*), counter-based chunked sampling, zarr stores (model.md §2)."""

from slrpipe.data.sampling import Chunk, SLRTask, sample_chunk
from slrpipe.data.store import SLRDataset, write_dataset
from slrpipe.data.teacher import make_teacher

__all__ = ["Chunk", "SLRTask", "SLRDataset", "make_teacher", "sample_chunk", "write_dataset"]

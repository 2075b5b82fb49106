"""Dataset handles: one interface over stored (zarr v3) and regenerated-on-the-fly SLR datasets.

A dataset is fully determined by (task, n, teacher_seed, data_seed, chunk_size, sampler). It can be
*stored* (``write_dataset``: a zarr v3 group with arrays X, mask, y, eps, lengths, k_star, v_star,
written chunk by chunk) or *regenerated* from its recorded seeds; ``SLRDataset.chunk(i)`` returns
bit-identical arrays from either source. The workflow stores the training set of the laptop
configuration and regenerates the paper configuration on the fly (n·L·D = 4·10⁸ float32 = 1.6 GB
of X per dataset, cheaper to redraw than to read back), streaming chunk by chunk either way. The
sampler (``slrpipe.vocabulary.SAMPLERS``) says where a regenerated set is drawn: "numpy" on the host
(``slrpipe.data.sampling``), "jax" on JAX's default device (``slrpipe.data.device``: the arrays of
a chunk, and of :meth:`SLRDataset.load`, are then jax arrays that never pass through the host).

Source: docs/model.md §2 (data law) and §8 (chunked sampling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from slrpipe import __version__
from slrpipe.cf import variable_attrs
from slrpipe.data.sampling import Chunk, SLRTask, sample_chunk
from slrpipe.data.teacher import make_teacher
from slrpipe.io import atomic_dir
from slrpipe.lengths import format_L
from slrpipe.provenance import provenance
from slrpipe.setting import Setting
from slrpipe.vocabulary import JAX, NUMPY, SAMPLERS, check_choice

FORMAT = "slrpipe-dataset-1"
#: the random stream of chunk i, per sampler (recorded with every data set and result)
RNG = {
    NUMPY: "numpy.random.default_rng([data_seed, chunk_index])",
    JAX: "jax.random.fold_in(jax.random.PRNGKey(data_seed), chunk_index) (threefry)",
}


@dataclass(frozen=True)
class SLRDataset:
    """n samples of ``task`` drawn with ``data_seed`` under the teacher of ``teacher_seed``.

    ``chunk_size`` (default ``task.default_chunk_size()``, ~64 MiB of X) is part of the dataset's
    identity: chunk i holds rows [i·chunk_size, min(n, (i+1)·chunk_size)) and is drawn from
    ``default_rng([data_seed, i])`` (sampler "numpy", on the host) or ``fold_in(PRNGKey(data_seed),
    i)`` (sampler "jax", on the device; two samplers are two different draws). With ``path`` set,
    chunks are read from that zarr store instead of regenerated (identical numbers, host arrays).

    Raises:
        ValueError: n < 1, negative seeds, chunk_size < 1 or an unknown sampler.
    """

    task: SLRTask
    n: int
    teacher_seed: int
    data_seed: int
    chunk_size: int | None = None
    sampler: str = NUMPY
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self):
        if int(self.n) != self.n or self.n < 1:
            raise ValueError(f"n: must be an integer ≥ 1, got {self.n}")
        for name in ("teacher_seed", "data_seed"):
            v = getattr(self, name)
            if int(v) != v or v < 0:
                raise ValueError(f"{name}: must be an integer ≥ 0, got {v}")
        cs = self.task.default_chunk_size() if self.chunk_size is None else int(self.chunk_size)
        if cs < 1:
            raise ValueError(f"chunk_size: must be ≥ 1, got {self.chunk_size}")
        check_choice("sampler", self.sampler, SAMPLERS)
        object.__setattr__(self, "chunk_size", min(cs, int(self.n)))
        object.__setattr__(self, "n", int(self.n))

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def open(cls, path) -> SLRDataset:
        """Handle on a store written by ``write_dataset`` (chunks are read from it).

        Raises:
            ValueError: ``path`` is not an slrpipe dataset store.
        """
        import zarr

        try:
            g = zarr.open_group(str(path), mode="r", zarr_format=3)
        except Exception as exc:
            raise ValueError(f"data: {path} is not a readable zarr v3 store ({exc})") from exc
        a = dict(g.attrs)
        if a.get("format") != FORMAT:
            raise ValueError(f"data: {path} is not an slrpipe dataset store (format {a.get('format')!r})")
        law = {int(k): p for k, p in a["L_law"].items()}
        task = SLRTask(Setting(a["model"], float(a["nu"]), law, a["delta"]), a["D"])
        sampler = a.get("sampler", NUMPY)  # stores written before the jax sampler existed
        return cls(task, a["n"], a["teacher_seed"], a["data_seed"], a["chunk_size"], sampler, Path(path))

    def regenerated(self) -> SLRDataset:
        """The same dataset, drawn on the fly from its seeds instead of read from a store."""
        return replace(self, path=None)

    # --- access -------------------------------------------------------------------------------
    @cached_property
    def teacher(self) -> tuple[np.ndarray, np.ndarray]:
        """(k_star, v_star), float64 (D,)."""
        return make_teacher(self.task.D, self.teacher_seed)

    @property
    def n_chunks(self) -> int:
        """Number of chunks, ⌈n / chunk_size⌉."""
        return math.ceil(self.n / self.chunk_size)

    def bounds(self, i: int) -> tuple[int, int]:
        """Row range [a, b) of chunk ``i``.

        Raises:
            ValueError: ``i`` outside [0, n_chunks)."""
        if not 0 <= i < self.n_chunks:
            raise ValueError(f"i: chunk index must be in [0, {self.n_chunks}), got {i}")
        return i * self.chunk_size, min(self.n, (i + 1) * self.chunk_size)

    @cached_property
    def _group(self):
        import zarr

        return zarr.open_group(str(self.path), mode="r", zarr_format=3)

    def chunk(self, i: int) -> Chunk:
        """Chunk i (see ``Chunk`` for shapes), read (host arrays) or regenerated (where the sampler
        draws)."""
        a, b = self.bounds(i)
        if self.path is not None:
            g = self._group
            return Chunk(g["X"][a:b], g["mask"][a:b], g["y"][a:b], g["eps"][a:b], g["lengths"][a:b])
        k, v = self.teacher
        if self.sampler == JAX:
            from slrpipe.data.device import sample_chunk_device

            return sample_chunk_device(self.task, k, v, self.data_seed, i, b - a)
        return sample_chunk(self.task, k, v, self.data_seed, i, b - a)

    def chunks(self):
        """Iterate over all chunks in order (one in memory at a time)."""
        for i in range(self.n_chunks):
            yield self.chunk(i)

    def load(self) -> Chunk:
        """The whole dataset as one ``Chunk`` (n rows), on the host or, regenerated by the jax
        sampler, on the device; needs n·L_max·D·4 bytes of memory there (plus one chunk)."""
        if self.path is None and self.sampler == JAX:
            from slrpipe.data.device import concatenate

            return concatenate(self.n, self.chunks())
        t = self.task
        out = Chunk(
            np.empty((self.n, t.L_max, t.D), np.float32),
            np.empty((self.n, t.L_max), bool),
            np.empty(self.n),
            np.empty(self.n, np.int64),
            np.empty(self.n, np.int64),
        )
        for i in range(self.n_chunks):  # filled in place: peak memory is the result plus one chunk
            a, b = self.bounds(i)
            for dst, src in zip(out, self.chunk(i)):
                dst[a:b] = src
        return out

    def attrs(self) -> dict:
        """Every parameter of the dataset, JSON-compatible (stored in the zarr attributes)."""
        t = self.task
        return {
            "format": FORMAT,
            "model": t.model,
            "nu": t.nu,
            "L": format_L(t.L),
            "L_law": {str(k): p for k, p in t.L.items()},
            "L_max": t.L_max,
            "delta": t.delta,
            "D": t.D,
            "n": self.n,
            "alpha": self.n / t.D,
            "teacher_seed": self.teacher_seed,
            "data_seed": self.data_seed,
            "chunk_size": self.chunk_size,
            "sampler": self.sampler,
            "rng": RNG[self.sampler],
            "slrpipe_version": __version__,
        }


def write_dataset(path, dataset: SLRDataset) -> SLRDataset:
    """Write ``dataset`` to a zarr v3 store at ``path`` atomically, one chunk at a time.

    Arrays (dims): X float32 (sample, token, dim), mask bool (sample, token), y float64 (sample),
    eps int64 (sample), lengths int64 (sample), k_star / v_star float64 (dim), each with its CF
    ``units`` and ``long_name`` (:mod:`slrpipe.cf`); the group's attributes are ``dataset.attrs()``
    and the provenance with the CF globals (:func:`slrpipe.provenance.provenance`). No compression (Gaussian floats do not compress). Returns a handle that
    reads from the new store.
    """
    import zarr

    t, c = dataset.task, dataset.chunk_size
    src = dataset.regenerated() if dataset.path is None else dataset
    with atomic_dir(path) as tmp:
        g = zarr.open_group(str(tmp), mode="w", zarr_format=3)
        g.attrs.update(provenance() | dataset.attrs())
        spec = {
            "X": ((t.L_max, t.D), "float32", ("token", "dim")),
            "mask": ((t.L_max,), "bool", ("token",)),
            "y": ((), "float64", ()),
            "eps": ((), "int64", ()),
            "lengths": ((), "int64", ()),
        }
        arrs = {
            name: g.create_array(
                name,
                shape=(dataset.n, *tail),
                chunks=(c, *tail),
                dtype=dt,
                compressors=None,
                dimension_names=("sample", *dims),
                attributes=variable_attrs(name, np.dtype(dt)),
            )
            for name, (tail, dt, dims) in spec.items()
        }
        for name, vec in zip(("k_star", "v_star"), dataset.teacher):
            g.create_array(name, data=vec, dimension_names=("dim",), attributes=variable_attrs(name, vec.dtype))
        for i in range(dataset.n_chunks):
            a, b = dataset.bounds(i)
            ch = src.chunk(i)
            for name in spec:
                arrs[name][a:b] = np.asarray(getattr(ch, name))
    return replace(dataset, path=Path(path))

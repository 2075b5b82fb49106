"""Atomic writers: every result file appears complete or not at all.

A failed or killed job leaves at most a ``.tmp-*`` sibling, never a half-written result, and an
existing result is replaced only once its successor is fully written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


def _tmp_sibling(path: Path, is_dir: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if is_dir:
        return Path(tempfile.mkdtemp(prefix=f".tmp-{path.name}-", dir=path.parent))
    fd, name = tempfile.mkstemp(prefix=f".tmp-{path.name}-", dir=path.parent)
    os.close(fd)
    return Path(name)


def _replace(tmp: Path, path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        # os.replace cannot overwrite a non-empty directory: move the old one aside first.
        old = Path(tempfile.mkdtemp(prefix=f".old-{path.name}-", dir=path.parent))
        os.replace(path, old / path.name)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)


@contextmanager
def atomic_file(path):
    """Context manager yielding a temporary sibling file that replaces ``path`` on success."""
    path = Path(path)
    tmp = _tmp_sibling(path, is_dir=False)
    try:
        yield tmp
        _replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_netcdf(ds, path) -> Path:
    """Write an ``xarray.Dataset`` to netCDF4 (h5netcdf engine) atomically; returns the path."""
    with atomic_file(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")
    return Path(path)


def _vlen_strings(ds):
    """Fixed-width unicode variables as variable-length strings: zarr v3 has a specified "string"
    data type for the latter only (numpy's '<U' becomes zarr-python's unspecified FixedLengthUTF32)."""
    fixed = [k for k, v in ds.variables.items() if v.dtype.kind == "U"]
    return ds.assign_coords({k: ds[k].astype(object) for k in fixed if k in ds.coords}).assign(
        {k: ds[k].astype(object) for k in fixed if k in ds.data_vars})


def write_zarr(obj, path, **kwargs) -> Path:
    """Write an ``xarray.Dataset`` or ``xarray.DataTree`` to a zarr v3 store atomically, with
    xarray's default encodings (those carried from source files are dropped); string variables are
    stored as zarr's variable-length "string" type (read back as Python str)."""
    import xarray as xr

    path = Path(path)
    # encodings read from the result files would be reapplied here: an int variable that an outer
    # join promoted to float with NaN (e.g. ``iterations`` of a start that does not exist) would be
    # cast back to int, NaN becoming −2⁶³
    prep = lambda ds: _vlen_strings(ds.drop_encoding())  # noqa: E731
    obj = obj.map_over_datasets(prep) if isinstance(obj, xr.DataTree) else prep(obj)
    tmp = _tmp_sibling(path, is_dir=True)
    try:
        shutil.rmtree(tmp)
        obj.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False, **kwargs)
        _replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def write_text(text: str, path) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8); returns the path."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


@contextmanager
def atomic_dir(path):
    """Context manager yielding a temporary directory that is renamed to ``path`` on success."""
    p = Path(path)
    tmp = _tmp_sibling(p, is_dir=True)
    try:
        yield tmp
        _replace(tmp, p)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

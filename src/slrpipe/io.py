"""Atomic writers: every result file appears complete or not at all, self-described.

A failed or killed job leaves at most a ``.tmp-*`` sibling, never a half-written result, and an
existing result is replaced only once its successor is fully written. The netCDF and zarr writers
give every variable its CF ``units`` and ``long_name`` (:func:`slrpipe.cf.describe`) on the way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from slrpipe.cf import describe


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
    """Write an ``xarray.Dataset`` to netCDF3 (64-bit offset, scipy engine) atomically, each variable
    with its CF attributes (:func:`slrpipe.cf.describe`); returns the path.

    netCDF3 rather than netCDF4: a job's result opens ~10× faster (a train job's file: 7.6 ms
    against 80 ms through h5netcdf/HDF5), which the aggregation of hundreds of files pays. The
    format has no 64-bit integer or string types: integers are written as int32 (xarray refuses
    values that do not fit; our seeds are 31-bit) and strings as character arrays;
    :func:`read_netcdf` gives both back as int64 and str.
    """
    ds = describe(ds)
    with atomic_file(path) as tmp:
        ds.to_netcdf(tmp, engine="scipy", format="NETCDF3_64BIT")
    return Path(path)


def read_netcdf(path):
    """The ``xarray.Dataset`` of a result file, loaded and closed: netCDF3 (:func:`write_netcdf`)
    or netCDF4 (results of earlier versions), with the int64 and str dtypes of the written
    dataset restored (int32 → int64, character arrays → fixed-width str)."""
    import xarray as xr

    with xr.open_dataset(path) as ds:  # the engine from the file's signature
        ds = ds.load()
    fix = {
        k: v.astype("int64") if v.dtype == "int32" else v.astype(str)
        for k, v in ds.variables.items()
        if v.dtype == "int32" or v.dtype == object
    }
    coords = {k: v for k, v in fix.items() if k in ds.coords}
    return ds.assign_coords(coords).assign({k: v for k, v in fix.items() if k not in coords})


def _vlen_strings(ds):
    """Fixed-width unicode variables as variable-length strings: zarr v3 has a specified "string"
    data type for the latter only (numpy's '<U' becomes zarr-python's unspecified FixedLengthUTF32)."""
    fixed = [k for k, v in ds.variables.items() if v.dtype.kind == "U"]
    return ds.assign_coords({k: ds[k].astype(object) for k in fixed if k in ds.coords}).assign(
        {k: ds[k].astype(object) for k in fixed if k in ds.data_vars}
    )


def write_zarr(obj, path, **kwargs) -> Path:
    """Write an ``xarray.Dataset`` or ``xarray.DataTree`` to a zarr v3 store atomically, with
    xarray's default encodings (those carried from source files are dropped) and each variable's CF
    attributes (:func:`slrpipe.cf.describe`); string variables are stored as zarr's variable-length
    "string" type (read back as Python str)."""
    import xarray as xr

    path = Path(path)
    # encodings read from the result files would be reapplied here: an int variable that an outer
    # join promoted to float with NaN (e.g. ``iterations`` of a start that does not exist) would be
    # cast back to int, NaN becoming −2⁶³
    prep = lambda ds: _vlen_strings(ds.drop_encoding())
    obj = describe(obj.map_over_datasets(prep) if isinstance(obj, xr.DataTree) else prep(obj))
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

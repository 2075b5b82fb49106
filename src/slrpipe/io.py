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


def write_netcdf(ds, path) -> Path:
    """Write an ``xarray.Dataset`` to netCDF4 (h5netcdf engine) atomically; returns the path."""
    path = Path(path)
    tmp = _tmp_sibling(path, is_dir=False)
    try:
        ds.to_netcdf(tmp, engine="h5netcdf")
        _replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_zarr(obj, path, **kwargs) -> Path:
    """Write an ``xarray.Dataset`` or ``xarray.DataTree`` to a zarr v3 store atomically."""
    path = Path(path)
    tmp = _tmp_sibling(path, is_dir=True)
    try:
        shutil.rmtree(tmp)
        obj.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False, **kwargs)
        _replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


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

"""Provenance attributes that every result file carries (package versions, host, time, parameters)."""

from __future__ import annotations

import hashlib
import json
import platform
import time
from functools import lru_cache
from importlib import resources
from importlib.metadata import PackageNotFoundError, version

from slrpipe import __version__

#: the libraries whose versions can change a number; recorded with every result
PACKAGES = ("jax", "jaxlib", "flax", "optax", "numpy", "scipy", "xarray", "zarr", "h5netcdf", "snakemake")
#: the pinned versions of an exact reproduction (README: pip install ... -c constraints.txt)
CONSTRAINTS = resources.files("slrpipe") / "resources" / "constraints.txt"


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    """{package: installed version} for :data:`PACKAGES` ("absent" where not installed)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def constraints_sha256() -> str:
    """sha256 of the pinned constraints.txt shipped with the package ("unknown" if unreadable)."""
    try:
        return hashlib.sha256(CONSTRAINTS.read_bytes()).hexdigest()
    except OSError:
        return "unknown"


def provenance(**extra) -> dict:
    """{slrpipe_version, python, host, created_unix, packages} plus ``extra`` (dicts and lists as JSON
    text, since netCDF/zarr attributes hold scalars and strings only)."""
    attrs = {
        "slrpipe_version": __version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "created_unix": time.time(),
        "packages": package_versions(),
    }
    attrs.update(extra)
    return {k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in attrs.items()}

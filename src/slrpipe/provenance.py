"""Provenance attributes that every result file carries (package version, host, time, parameters)."""

from __future__ import annotations

import json
import platform
import time

from slrpipe import __version__


def provenance(**extra) -> dict:
    """{slrpipe_version, python, host, created_unix} plus ``extra`` (dicts and lists as JSON text,
    since netCDF/zarr attributes hold scalars and strings only)."""
    attrs = {
        "slrpipe_version": __version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "created_unix": time.time(),
    }
    attrs.update({k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in extra.items()})
    return attrs

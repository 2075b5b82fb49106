"""The CF metadata table (slrpipe.cf) and the global attributes (slrpipe.provenance): names derived
by a prefix or suffix take their base's units, unknown names are reported, the date is ISO 8601 and
the history names the command."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import numpy as np
import xarray as xr

from slrpipe import cf, provenance


def test_lookup_composes_derived_names_from_their_base():
    assert cf.lookup("wall_time") == ("s", "wall-clock time")
    assert cf.lookup("rsb1_scan_wall_time") == ("s", "1RSB: wall-clock time along the s scan")
    assert cf.lookup("rsb1_test_error_batch_se") == ("1", "1RSB: batch-means standard error of test mean squared error")
    assert cf.lookup("train_loss_ground")[0] == "1" and "ground state" in cf.lookup("train_loss_ground")[1]
    assert cf.lookup("rs_stable") == ("1", cf.LONG_NAMES["rs_stable"])  # an entry of its own wins over rs_
    assert cf.lookup("no_such_thing") is None and cf.lookup("_se") is None


def test_describe_sets_units_on_numbers_only_and_warns_on_unknown_names(caplog):
    ds = xr.Dataset(
        {"wall_time": ((), 1.5), "converged": ((), True), "mystery": ((), 1.0)},
        coords={"sigma": "softmax", "alpha": [1.0, 2.0]},
        attrs={"keep": 1},
    )
    with caplog.at_level(logging.WARNING, logger="slrpipe.cf"):
        out = cf.describe(ds)
    assert out["wall_time"].attrs == {"units": "s", "long_name": "wall-clock time"}
    assert out["converged"].attrs["units"] == "1" and out["alpha"].attrs["units"] == "1"
    assert out["sigma"].attrs == {"long_name": cf.LONG_NAMES["sigma"]}  # text: no units
    assert out["mystery"].attrs == {} and "mystery" in caplog.text
    assert out.attrs == {"keep": 1} and not ds["wall_time"].attrs  # a copy; values untouched
    np.testing.assert_array_equal(out["alpha"].values, ds["alpha"].values)


def test_provenance_has_the_cf_globals_and_the_recorded_command():
    provenance.record_command(["replica", "--out", "a b.nc"])
    try:
        attrs = provenance.provenance(command="replica")
    finally:
        provenance._COMMAND = None
    assert attrs["Conventions"] == cf.CONVENTIONS
    created = datetime.fromisoformat(attrs["date_created"])
    assert created.tzinfo is not None and abs((datetime.now(UTC) - created).total_seconds()) < 60
    assert attrs["history"] == f"{attrs['date_created']} slrpipe replica --out 'a b.nc'"
    assert "created_unix" not in attrs

"""Atomic writers (slrpipe.io): what the store gets is what the dataset holds."""

import numpy as np
import xarray as xr

from slrpipe.io import write_netcdf, write_zarr


def test_int_promoted_by_a_join_keeps_its_nan(tmp_path):
    # an int variable read from a result file carries its int encoding; an outer join over starts
    # that do not all exist promotes it to float with NaN, which must not be cast back to int
    for i in (0, 1):
        write_netcdf(xr.Dataset({"iterations": ("run", np.array([7 + i], np.int64))}, coords={"run": [i]}),
                     tmp_path / f"r{i}.nc")
    a, b = (xr.open_dataset(tmp_path / f"r{i}.nc").load() for i in (0, 1))
    b = b.assign_coords(run=[2])
    joined = xr.concat([a, b], "run").reindex(run=[0, 1, 2])
    assert joined["iterations"].encoding.get("dtype") == np.dtype("int64")  # the hazard is real
    write_zarr(joined, tmp_path / "s.zarr")
    back = xr.open_zarr(tmp_path / "s.zarr").load()["iterations"].values
    np.testing.assert_array_equal(back, [7.0, np.nan, 8.0])

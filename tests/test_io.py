"""Atomic writers (slrpipe.io): what the store gets is what the dataset holds."""

import numpy as np
import pytest
import xarray as xr

from slrpipe.cf import describe
from slrpipe.io import read_netcdf, write_netcdf, write_zarr


def test_int_promoted_by_a_join_keeps_its_nan(tmp_path):
    # an int variable read from a result file carries its int encoding; an outer join over starts
    # that do not all exist promotes it to float with NaN, which must not be cast back to int
    for i in (0, 1):
        write_netcdf(
            xr.Dataset({"iterations": ("run", np.array([7 + i], np.int64))}, coords={"run": [i]}), tmp_path / f"r{i}.nc"
        )
    a, b = (xr.open_dataset(tmp_path / f"r{i}.nc").load() for i in (0, 1))
    b = b.assign_coords(run=[2])
    joined = xr.concat([a, b], "run").reindex(run=[0, 1, 2])
    assert joined["iterations"].encoding["dtype"].kind == "i"  # the hazard is real
    write_zarr(joined, tmp_path / "s.zarr")
    back = xr.open_zarr(tmp_path / "s.zarr").load()["iterations"].values
    np.testing.assert_array_equal(back, [7.0, np.nan, 8.0])


def test_result_files_round_trip_with_their_dtypes(tmp_path):
    # netCDF3 has no int64 and no strings: read_netcdf gives back what write_netcdf was given
    ds = xr.Dataset(
        {
            "iterations": ((), np.int64(2**31 - 1)),
            "converged": ((), True),
            "k": ("d", np.arange(3, dtype=np.float32)),
            "sigma": ((), "softmax"),
            "w": ("i", np.array(["alpha", "b"])),
        },
        coords={"seed": np.int64(7), "model": "spiked"},
        attrs={"git_commit": "abc", "n": 3},
    )
    back = read_netcdf(write_netcdf(ds, tmp_path / "r.nc"))
    assert back.identical(describe(ds))  # the same, each variable with its CF attributes
    assert back["k"].attrs["long_name"] == "learned key vector" and back["iterations"].attrs["units"] == "1"
    assert {k: v.dtype for k, v in back.variables.items()} == {k: v.dtype for k, v in ds.variables.items()}
    with pytest.raises(ValueError):  # a value netCDF3 cannot hold is refused, never truncated
        write_netcdf(ds.assign(iterations=np.int64(2**31)), tmp_path / "big.nc")
    assert not (tmp_path / "big.nc").exists()


def test_open_store_loads_the_named_nodes_and_reads_the_others_lazily(tmp_path):
    # a figure loads its panels' nodes only (slrpipe figure): the same values as a full load, the
    # named nodes in memory, the others read where used
    from slrpipe.analysis.aggregate import open_store, write_store

    rng = np.random.default_rng(0)
    node = lambda: xr.Dataset({"x": (("a",), rng.standard_normal(5)), "s": (("a",), np.array(list("abcde")))})
    tree = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"k": 1}), "population/p": node(), "erm/e": node()})
    write_store(tree, tmp_path / "slr.zarr")
    full = open_store(tmp_path / "slr.zarr")
    part = open_store(tmp_path / "slr.zarr", nodes=["population/p", "not/there"])
    assert part["population/p"].to_dataset()["x"].variable._in_memory
    assert not part["erm/e"].to_dataset()["x"].variable._in_memory
    assert part.attrs == full.attrs
    for path in ("population/p", "erm/e"):
        xr.testing.assert_identical(part[path].to_dataset().load(), full[path].to_dataset())
        assert part[path].to_dataset()["s"].dtype.kind == "U"  # strings as written, lazy or not


def test_experiment_node_is_the_named_node_or_a_one_line_error():
    # the scripts' loader (slrpipe.analysis.aggregate.experiment_node): the node as a Dataset, and an
    # experiment the store lacks named in one line with those it has
    from slrpipe.analysis.aggregate import experiment_node

    ds = xr.Dataset({"x": (("a",), np.arange(3.0))})
    tree = xr.DataTree.from_dict({"erm/e1": ds, "erm/e2": ds, "replica/r": ds})
    xr.testing.assert_identical(experiment_node(tree, "erm", "e2"), ds)
    with pytest.raises(KeyError) as info:
        experiment_node(tree, "erm", "r")
    assert "erm.r: not in the store; allowed: ['e1', 'e2']" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(KeyError, match=r"population\.p: not in the store; allowed: \[\]"):
        experiment_node(tree, "population", "p")

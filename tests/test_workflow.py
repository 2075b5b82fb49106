"""End to end: the smoke config through the snakemake CLI, then the caching behaviour.

One module-scoped run (about a minute on 2 cores) feeds every test here.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import copy_workflow, snakemake

pytestmark = pytest.mark.slow
SMOKE = ["--cores", "2", "--configfile", "config/smoke.yaml"]


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    wd = copy_workflow(tmp_path_factory.mktemp("wf"))
    snakemake(wd, *SMOKE)
    return wd


def job_stats(out: str) -> dict[str, int]:
    """{rule: count} of a dry run's job table."""
    jobs: dict[str, int] = {}
    table = out.split("Job stats:", 1)[1].split("\n\n", 1)[0]  # the first table (a dry run prints two)
    for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M):
        if m.group(1) != "total":
            jobs[m.group(1)] = int(m.group(2))
    return jobs


def trained_outputs(out: str, wd) -> list[str]:
    """The ERM result files a dry run in ``wd`` would write: the members of the training batches it
    plans, from their manifests (written when the workflow is loaded, workflow/rules/common.smk)."""
    batches = re.findall(r"^rule train_erm:\n(?:    .*\n)*?    wildcards: batch=(\w+)$", out, re.M)
    return [
        m["out"] for b in batches for m in json.loads((wd / "results" / "plan" / "train_erm" / f"{b}.json").read_text())
    ]


def planned_jobs(wd, *extra) -> dict[str, int]:
    """{rule: count} of what a dry run would execute ({} when there is nothing to do)."""
    out = snakemake(wd, *SMOKE, "-n", *extra).stdout
    if "Nothing to be done" in out:
        return {}
    return job_stats(out)


def dry_run_with(wd, name: str, edit) -> str:
    """The dry run's output with the smoke config changed by ``edit(cfg)`` (written as
    config/<name>.yaml)."""
    cfg = yaml.safe_load((wd / "config" / "smoke.yaml").read_text())
    edit(cfg)
    path = wd / "config" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return snakemake(wd, "--cores", "2", "--configfile", str(path), "-n").stdout


#: the jobs after any change of a result: the plan file, the store, the check, its tables and the target
AFTER_RESULTS = {"plan": 1, "aggregate": 1, "validate": 1, "tables": 1, "all": 1}
#: the figures redrawn when spiked_L2's replica or ERM results change: fig3, validation and
#: complexity draw that replica node, optimization the replica node of its data setting
REPLICA_FIGURES = {"fig_fig3": 1, "fig_optimization": 1, "fig_validation": 1, "fig_complexity": 1}


def open_strictly(store):
    """The store opened by plain xarray with every warning an error (consolidated metadata, nothing
    foreign inside the store directory)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return xr.open_datatree(store, engine="zarr")


def test_store_opens_cleanly_with_nothing_foreign_inside(done):
    store = done / "results" / "slr.zarr"
    tree = open_strictly(store)
    assert {"population", "erm", "replica"} <= set(tree.children)
    names = {p.name for p in store.rglob("*") if p.is_file()}
    assert ".snakemake_timestamp" not in names and "zarr.json" in names
    assert not any(p.name.startswith((".tmp-", ".old-")) for p in store.parent.iterdir())
    assert (done / "results" / "slr.zarr.done").exists()  # the sentinel Snakemake tracks instead


def test_unreadable_result_file_is_named_in_one_line_and_the_store_kept(done, tmp_path):
    import shutil
    import subprocess
    import sys

    results = tmp_path / "results"
    shutil.copytree(done / "results", results, ignore=shutil.ignore_patterns("cache"))
    before = open_strictly(results / "slr.zarr")["erm/spiked_L2"].to_dataset().load()
    bad = min((results / "erm").rglob("*.nc"))
    bad.write_bytes(bad.read_bytes()[:1000])  # a truncated result file
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "slrpipe",
            "aggregate",
            "--config",
            str(done / "config" / "smoke.yaml"),
            "--out",
            str(results / "slr.zarr"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=dict(__import__("os").environ, PYTHONPATH=str(done / "src")),
    )
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "Traceback" in line or "error" in line.lower()]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(bad) in errors[0] and f"rm {bad}" in errors[0], errors[0]
    # the previous store is intact, and no temporary sibling is left behind
    after = open_strictly(results / "slr.zarr")["erm/spiked_L2"].to_dataset().load()
    xr.testing.assert_identical(before, after)
    assert not any(p.name.startswith((".tmp-", ".old-")) for p in results.iterdir())


def test_snakemake_keeps_the_store_and_regenerates_a_removed_result(done, tmp_path):
    """Through Snakemake: a truncated result file fails the aggregation with its one line in the
    log, the last good store stays readable, and the advice (rm the file, rerun the same command)
    regenerates it and aggregates again."""
    import shutil

    wd = tmp_path / "wf"
    shutil.copytree(done, wd, ignore=shutil.ignore_patterns("cache"), symlinks=True)
    bad = min((wd / "results" / "erm").rglob("*_informed-r0_lbfgs.nc"))
    bad.write_bytes(bad.read_bytes()[:1000])
    proc = snakemake(wd, *SMOKE, check=False)
    assert proc.returncode != 0
    log = (wd / "results" / "logs" / "aggregate.log").read_text().splitlines()
    rel = bad.relative_to(wd)
    assert log[-1].startswith(f"slrpipe aggregate: error: cannot read result file {rel} ") and f"rm {rel} " in log[-1]
    assert not (wd / "results" / "slr.zarr.done").exists()
    open_strictly(wd / "results" / "slr.zarr")  # the last good store
    bad.unlink()
    jobs = planned_jobs(wd)  # the same command plans the lost job and the aggregation
    assert jobs["train_erm"] == 1 and jobs["aggregate"] == 1, jobs
    snakemake(wd, "results/slr.zarr.done", *SMOKE)  # (run up to the store only, to save time)
    assert bad.stat().st_size > 1000 and (wd / "results" / "slr.zarr.done").exists()
    open_strictly(wd / "results" / "slr.zarr")


def test_store_contents(done):
    tree = open_strictly(done / "results" / "slr.zarr")
    pop = tree["population/spiked_L2"].to_dataset()
    assert set(pop["sigma"].values) == {"bayes", "softmax", "linear"} and list(pop["nu"].values) == [0.5, 2.0]
    assert not pop["risk"].isnull().any()
    # Prop. 4.2 and §4: softmax attains the Bayes risk, linear does not (strictly, at ν > 0)
    np.testing.assert_allclose(pop["risk"].sel(sigma="softmax"), pop["risk"].sel(sigma="bayes"), atol=1e-6)
    assert (pop["risk"].sel(sigma="linear") > pop["risk"].sel(sigma="softmax") + 1e-3).all()
    erm = tree["erm/spiked_L2"].to_dataset()
    assert dict(erm.sizes) == {
        "sigma": 2,
        "lam": 1,
        "alpha": 2,
        "seed": 2,
        "init": 1,
        "restart": 1,
        "optimizer": 1,
        "step": erm.sizes["step"],
    }
    for v in ("test_error", "train_loss", "m_k", "q_k", "m_v", "q_v"):
        assert not erm[v].isnull().any(), v
    rep = tree["replica/spiked_L2"].to_dataset()
    assert dict(rep["test_error"].sizes) == {"sigma": 2, "lam": 1, "alpha": 2}
    assert rep["converged"].dtype == bool and "test_error_opt_lam" in rep
    # the Bayes-optimal curve on the same α grid, below the population risk of no information
    bo = rep["bayes_optimal_test_error"]
    assert bo.dims == ("alpha",) and bool(((bo > 0) & (bo < 1)).all()) and bool(rep["bayes_optimal_converged"].all())
    table = (done / "results" / "validation.txt").read_text()
    rows = json.loads((done / "results" / "validation.json").read_text())
    assert len(rows) == 4 and "== spiked_L2 ==" in table  # 2 σ × 2 α
    assert max(map(len, table.splitlines())) <= 120 and table.startswith("ERM vs replica theory: 4 points")
    assert "slrpipe_version" in tree.attrs and "config" in tree.attrs and "git_commit" in tree.attrs


def test_every_file_is_self_describing(done):
    """CF attributes (slrpipe.cf) on every file the smoke run writes: each step's netCDF result
    (population, ERM, replica, Bayes-optimal, rsb1, rsb1_error), the training data sets (zarr) and
    every node of the store, whose root carries the global ones."""
    import zarr
    from conftest import assert_self_describing

    results = done / "results"
    files = sorted(p for p in results.rglob("*.nc") if "cache" not in p.parts)
    kinds = {xr.open_dataset(p).attrs.get("command") for p in files}
    assert {"population", "replica", "rsb1", "rsb1-error"} <= kinds, kinds
    assert any("/erm/" in str(p) for p in files) and any("bayes_optimal" in str(p) for p in files)
    for path in files:
        with xr.open_dataset(path) as ds:
            assert_self_describing(ds, str(path.relative_to(results)))
    data = sorted(p for p in results.rglob("*.zarr") if p.name != "slr.zarr")
    assert data
    for path in data:
        assert_self_describing(zarr.open_group(str(path), mode="r"), str(path.relative_to(results)))
    tree = open_strictly(results / "slr.zarr")
    nodes = [node for node in tree.subtree if node.has_data]
    assert len(nodes) >= 5
    for node in nodes:
        assert_self_describing(node.to_dataset(), f"slr.zarr {node.path}", global_attrs=False)
        assert not {"history", "date_created"} & set(node.attrs), node.path  # its files', not its own
    root = dict(tree.attrs)
    assert root["Conventions"].startswith("CF-") and root["history"].startswith(
        f"{root['date_created']} slrpipe aggregate "
    )
    # names the aggregation derives take their base's units and a composed long name
    rep = tree["replica/spiked_L2"].to_dataset()
    assert rep["rsb1_scan_wall_time"].attrs["units"] == "s" and rep["rsb1_test_error_batch_se"].attrs["units"] == "1"
    assert rep["bayes_optimal_test_error"].attrs["long_name"] == "Bayes-optimal: test mean squared error"


def test_figures_are_real_images(done):
    import matplotlib.image as mpimg

    for fig in ("fig2", "cor43", "erm_vs_population", "fig3", "optimization", "validation", "complexity"):
        png, pdf = done / "results" / "figures" / f"{fig}.png", done / "results" / "figures" / f"{fig}.pdf"
        assert pdf.stat().st_size > 5_000 and pdf.read_bytes()[:4] == b"%PDF"
        img = mpimg.imread(png)
        assert img.shape[0] > 200 and img.shape[1] > 300
        # not blank: a good share of non-white pixels and several distinct colours (each 8-bit RGB
        # triple as one integer: np.unique over rows of a million-pixel image takes seconds)
        rgb = img[..., :3].reshape(-1, 3)
        colours = np.ravel_multi_index((rgb * 255).astype(int).T, (256, 256, 256))
        assert (rgb.min(axis=1) < 0.9).mean() > 0.02 and len(np.unique(colours)) > 20


def test_the_tables_rule_writes_every_table_from_the_rows(done):
    """rule tables (a target of rule all): results/tables/<name>.md for each of TABLES, rendered from
    results/validation.json: one line per compared point, the verdict counts summing to them, and
    the 1RSB table with the two points solved at α = 8 (the smoke config's rsb1.alphas)."""
    from slrpipe.analysis import tables
    from slrpipe.analysis.rows import read_rows

    rows = read_rows(done / "results" / "validation.json")
    written = sorted(p.name for p in (done / "results" / "tables").iterdir())
    assert written == sorted(f"{n}.md" for n in tables.TABLES)
    md = {n: (done / "results" / "tables" / f"{n}.md").read_text() for n in tables.TABLES}
    for name, render in tables.RENDERERS.items():
        assert md[name] == render(rows) + "\n", name
    assert len([line for line in md["validation"].splitlines() if line.startswith("| spiked_L2 |")]) == len(rows) == 4
    assert md["verdicts"].splitlines()[-1] == "| all | 4 |"
    assert [line.split("|")[4].strip() for line in md["rsb1"].splitlines()[2:]] == ["8", "8"]


def test_nothing_to_do_on_second_run(done):
    assert planned_jobs(done) == {}


def test_changing_one_alpha_reruns_only_its_jobs(done):
    """spiked_L2's α = 8 becomes 4 (the YAML rewritten with its keys sorted: another experiment
    order). The new α runs in new batches; the α = 8 batches lose spiked_L2's runs, so they rerun
    with the runs they keep (opt_L2, opt_gd_L2: a batch is one job); the α = 2 batches are untouched."""
    out = dry_run_with(done, "smoke_alpha", lambda cfg: cfg["erm"]["spiked_L2"].update(alphas=[2.0, 4.0]))  # 8 -> 4
    # 2 datasets (seeds) of the new α, the α = 4 and α = 8 batches (both σ each), then the plan file,
    # aggregation, the figures with ERM points and the ERM-vs-theory check; no theory job, and not
    # fig2/cor43
    assert job_stats(out) == {
        "generate_data": 2,
        "train_erm": 2,
        "fig_erm_vs_population": 1,
        **REPLICA_FIGURES,
        **AFTER_RESULTS,
    }, out
    trained = trained_outputs(out, done)
    assert not any("/alpha2/" in t for t in trained), trained
    assert sum("/alpha4/" in t for t in trained) == 4  # 2 σ × 2 seeds
    # α = 8 keeps opt_L2's informed and random starts and opt_gd_L2's GD run (seed 0), per σ
    assert sorted("_".join(t.rsplit("/", 1)[1].split("_")[2:]) for t in trained if "/alpha8/" in t) == sorted(
        2 * ["seed0_informed-r0_lbfgs.nc", "seed0_random-r0_lbfgs.nc", "seed0_random-r0_gd-lr0.05.nc"]
    )


def test_adding_a_restart_lists_exactly_its_jobs(done):
    """One more random start: the training batches that hold its runs (2 α, both σ, restart 1) —
    a batch is one job, so its other runs are retrained with it — then the store, the figures of
    the experiments in those batches and the check; no data or theory job, not fig2/cor43."""
    out = dry_run_with(done, "smoke_restart", lambda cfg: cfg["erm"]["opt_L2"].update(restarts=2))
    assert job_stats(out) == {
        "train_erm": 2,
        "fig_optimization": 1,
        "fig_erm_vs_population": 1,
        "fig_fig3": 1,
        "fig_validation": 1,
        "fig_complexity": 1,
        **AFTER_RESULTS,
    }, out
    trained = trained_outputs(out, done)
    new = [t for t in trained if t.endswith("_random-r1_lbfgs.nc")]
    assert len(new) == 4 and len(trained) == 20, trained


def test_changing_a_replica_sweep_redraws_the_figures_that_draw_it(done):
    """spiked_L2's replica sweep at another channel sample count: its two σ jobs (the Bayes-optimal
    sweep has its own count), the store, the check, and every figure drawing that node — fig3 and
    validation by name, optimization because opt_L2 and opt_gd_L2 have its data setting (spiked,
    ν = 2, L = 2, Δ = 0) — and no other figure; the 1RSB points start from the sweep, so they
    follow it."""
    out = dry_run_with(done, "smoke_samples", lambda cfg: cfg["replica"]["spiked_L2"].update(n_samples=256))  # 512
    assert job_stats(out) == {
        "replica": 2,
        "rsb1": 2,
        "rsb1_error": 2,
        **REPLICA_FIGURES,
        **AFTER_RESULTS,
    }, out


def test_changing_the_replica_alpha_grid_reruns_its_sweeps(done):
    """The α grid is in a sweep's command line, not its path: Snakemake reruns the sweep because
    it records the command (a params function of the wildcards only, args_of in
    workflow/rules/common.smk; a function of the output would not be recorded). Both σ sweeps and
    the Bayes-optimal one of spiked_L2 rerun, and the 1RSB points that start from them."""
    out = dry_run_with(done, "smoke_grid", lambda cfg: cfg["replica"]["spiked_L2"].update(alphas=[2.0, 4.0, 8.0]))
    assert job_stats(out) == {
        "replica": 3,
        "rsb1": 2,
        "rsb1_error": 2,
        **REPLICA_FIGURES,
        **AFTER_RESULTS,
    }, out


@pytest.mark.parametrize(
    "option, jobs",
    [
        ({"n_inner": 8}, {"rsb1": 2, "rsb1_error": 2}),
        ({"tol": 1e-3}, {"rsb1": 2, "rsb1_error": 2}),
        ({"s_max_rows": 3}, {"rsb1": 2, "rsb1_error": 2}),
        ({"batches": 2}, {"rsb1_error": 2}),
    ],
)
def test_changing_a_1rsb_option_reruns_only_the_1rsb_points(done, option, jobs):
    """A 1RSB sample size (in the path) or solver option (in the command line) reruns the two
    1RSB points of spiked_L2 (α = 8, softmax and linear) and their batch-means errors, not the RS
    sweep they start from; the number of batches K reruns the errors only, not the s scans."""
    out = dry_run_with(done, "smoke_rsb1", lambda cfg: cfg["replica"]["spiked_L2"]["rsb1"].update(option))
    assert job_stats(out) == {
        **jobs,
        **REPLICA_FIGURES,
        **AFTER_RESULTS,
    }, out


def test_rsb1_points_in_the_store_and_the_table(done):
    """ansatz [rs, rsb1] at α = 8: the 1RSB files and their batch-means errors in the replica node
    (NaN at α = 2, not solved),
    the scan on dim s, and RS on the 1RSB outer samples — the sweep's own samples here (N₀ =
    n_samples = 512, seed 0), started from the sweep's fixed point at (λ, α) — equal to the sweep's
    objective within 0.2 of its Monte Carlo s.e.: the hard channel 1RSB needs differs from the
    sweep's soft-min one by at most that (docs/theory.md §13); reading another α or λ of the sweep
    file, or other samples, would move it by far more."""
    tree = open_strictly(done / "results" / "slr.zarr")
    rep = tree["replica/spiked_L2"].to_dataset()
    rs = rep["rsb1_rs_objective"]
    assert rs.dims == ("sigma", "lam", "alpha") and rep["rsb1_scan_phi"].dims == ("sigma", "lam", "alpha", "s")
    assert bool(rs.sel(alpha=8.0).notnull().all()) and bool(rs.sel(alpha=2.0).isnull().all())
    assert list(rep["s"].values) == [1.0, 4.0]
    for s in ("softmax", "linear"):
        a = rep.sel(sigma=s, lam=0.1, alpha=8.0)
        se = 8.0 * float(a["train_loss_se"])
        assert abs(float(a["rsb1_rs_objective"]) - float(a["objective"])) <= 0.2 * se, (s, a)
        # the state reported (slrpipe.theory.replica.rsb1.scan): s*, or the largest Φ of the converged
        # rows, a lower bound (two rows, s_max_rows 2: no maximum can be bracketed)
        ok = a["rsb1_scan_converged"] == 1
        assert not bool(a["rsb1_bracketed"]) and np.isnan(float(a["rsb1_s_star"]))
        if bool(ok.any()):
            assert float(a["rsb1_objective"]) == float(a["rsb1_scan_phi"].where(ok).max()), (s, a)
            assert bool(a["rsb1_lower_bound"])
        # the batch-means error of that state (rule rsb1_error: K = 4 batches of 128 outer samples)
        assert float(a["rsb1_batches_converged"]) <= 4
        if np.isfinite(float(a["rsb1_s_reported"])):
            assert float(a["rsb1_test_error_batch_se"]) > 0 and float(a["rsb1_objective_batch_se"]) > 0, (s, a)
        else:
            assert np.isnan(float(a["rsb1_test_error_batch_se"]))
    rows = json.loads((done / "results" / "validation.json").read_text())
    assert all(np.isfinite(r["rsb1_rs_objective"]) == (r["alpha"] == 8.0) for r in rows)
    assert all(np.isfinite(r["rsb1_test_error_batch_se"]) == np.isfinite(r["rsb1_s_reported"]) for r in rows)
    assert "1RSB (docs/theory.md §13)" in (done / "results" / "validation.txt").read_text()


def test_store_has_starts_trajectories_and_ground_state(done):
    from slrpipe.analysis.aggregate import open_store

    tree = open_store(done / "results" / "slr.zarr")
    opt = tree["erm/opt_L2"].to_dataset()
    assert list(opt["init"].values) == ["informed", "random"] and list(opt["optimizer"].values) == ["lbfgs"]
    # the informed start has one run (restart 0); the ground state is the lower of the two objectives
    assert opt["train_loss"].sel(init="informed", restart=0).notnull().all()
    low = opt["train_loss"].min(("init", "restart", "optimizer"))
    np.testing.assert_array_equal(opt["train_loss_ground"].values, low.values)
    assert set(np.unique(opt["ground_init"].values)) <= {"informed", "random"}
    # dist_ground pairs each run with that same ground state: 0 there, and the ground state's own
    # distance to the informed minimum is the informed run's dist_ground
    at_ground = opt["dist_ground"].sel(
        init=opt["ground_init"], restart=opt["ground_restart"], optimizer=opt["ground_optimizer"]
    )
    np.testing.assert_array_equal(at_ground.values, 0.0)
    np.testing.assert_array_equal(
        opt["dist_informed_ground"].values, opt["dist_ground"].sel(init="informed", restart=0, optimizer="lbfgs").values
    )
    gd = tree["erm/opt_gd_L2"].to_dataset()
    risk = gd["traj_test_error_pop"].sel(init="random", restart=0, optimizer="gd", lam=0.1, seed=0)
    assert list(gd["step"].values) == [0, 20, 40, 60, 80, 100] and bool(np.isfinite(risk).all())
    # the last recorded step is where the run ended: the same formula at the same overlaps
    np.testing.assert_allclose(
        risk.sel(step=100).values,
        gd["test_error_pop"].sel(init="random", restart=0, optimizer="gd", lam=0.1, seed=0).values,
        rtol=1e-6,
    )
    assert "ground" in (done / "results" / "validation.txt").read_text()


def test_touching_population_solver_reruns_population_only(done):
    mod = done / "src" / "slrpipe" / "theory" / "population.py"
    original = mod.read_text()
    try:
        mod.write_text(original + "\n# a comment: documentation only, nothing reruns\n")
        assert planned_jobs(done) == {}
        mod.write_text(original + "\n_AN_EDIT = 1\n")
        jobs = planned_jobs(done)
    finally:
        mod.write_text(original)
    assert "train_erm" not in jobs and "generate_data" not in jobs, jobs
    # the population sweep's batch (3 σ) and the batch at the one ERM setting (bayes + 2 σ, shared
    # by its 3 experiments): one job each
    assert jobs.get("population") == 2 and jobs.get("aggregate") == 1, jobs
    assert planned_jobs(done) == {}  # restored source: nothing to do again


def test_report_has_figures_with_captions(done):
    snakemake(done, *SMOKE, "--report", "report.html")
    html = (done / "report.html").read_text(errors="replace")
    for fig in ("fig2.png", "cor43.png", "erm_vs_population.png"):
        assert fig in html
    assert "optimal population risk vs signal strength" in html  # the fig2 caption


def test_the_first_replica_sweep_of_each_sigma_starts_first(workflow_dir):
    """The default config's dry run: of its 9 replica jobs, exactly the first sweep of each σ
    (softmax, linear) has priority 11, so that the two jobs a 2-core run starts first compile
    different XLA programs; the rest, the Bayes-optimal sweeps included, have 10."""
    out = snakemake(workflow_dir, "--cores", "2", "-n").stdout
    jobs = re.findall(r"^rule replica:\n(.*?)(?:\n\n|\Z)", out, re.M | re.S)
    prio = {}
    for block in jobs:
        path = re.search(r"output: (\S+)", block).group(1)
        prio[path] = int(re.search(r"priority: (\d+)", block).group(1))
    assert len(prio) == 9, out
    first = sorted(p for p, v in prio.items() if v == 11)
    assert [p.split("/")[-2] for p in first] == ["linear", "softmax"], prio
    assert all(v == 10 for p, v in prio.items() if p not in first), prio


def test_population_only_config_end_to_end(workflow_dir):
    """Every config section is optional: a population sweep alone runs to its store and figure."""
    cfg = {
        "population": {"p": {"model": "spiked", "L": 2, "nu": [1.0], "sigmas": ["bayes", "linear"]}},
        "figures": {"fig2": ["p"]},
    }
    (workflow_dir / "config" / "pop.yaml").write_text(yaml.safe_dump(cfg))
    snakemake(workflow_dir, "--cores", "2", "--configfile", "config/pop.yaml")
    tree = open_strictly(workflow_dir / "results" / "slr.zarr")
    assert set(tree.children) == {"population"} and set(tree["population/p"]["sigma"].values) == {"bayes", "linear"}
    assert (workflow_dir / "results" / "figures" / "fig2.png").stat().st_size > 5_000
    assert not (workflow_dir / "results" / "validation.txt").exists()
    # no comparison: each table one sentence saying so
    assert (workflow_dir / "results" / "tables" / "verdicts.md").read_text().startswith("No point compared")

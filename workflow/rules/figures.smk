# Figures read only results/slr.zarr. The store is an ancient() input so that a figure reruns only
# when the result files of *its* experiments change, not whenever any part of the store does.

for _fig in FIGURE_INPUTS:

    rule:
        name:
            f"fig_{_fig}"
        input:
            store=ancient(STORE_DONE),  # the sentinel of results/slr.zarr (aggregate.smk)
            uses=figure_uses(_fig),
            # the comparison's rows for a figure drawn from them (READS_ROWS): ancient, as the store
            rows=[ancient(p) for p in VALIDATION_ROWS] if _fig in READS_ROWS else [],
        output:
            pdf=f"results/figures/{_fig}.pdf",
            png=report(f"results/figures/{_fig}.png", caption=f"../report/{_fig}.rst", category="Figures"),
        log:
            f"results/logs/figures/{_fig}.log",
        benchmark:
            f"results/benchmarks/figures/{_fig}.tsv"
        localrule: True
        params:
            fig=_fig,
            experiments=",".join(FIGURE_INPUTS[_fig][1]),
            rows=" ".join(f"--validation {p}" for p in VALIDATION_ROWS) if _fig in READS_ROWS else "",
        shell:
            f"{SLRPIPE} figure {{params.fig}} --store {STORE} --experiments {{params.experiments}}"
            " --out results/figures/{params.fig} {params.rows} > {log} 2>&1"

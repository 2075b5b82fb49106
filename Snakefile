# slrpipe — single-location regression with attention, from config to figures.
#   data (teacher, SLR samples) → train (ERM, Flax) → theory (population, replica)
#   → aggregate (results/slr.zarr) → figures (results/figures/)
# Run: `snakemake --cores all` (config/config.yaml) or `snakemake --profile slurm` (docs/cluster.md).

# A config given with --configfile replaces the default instead of being merged into it.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/length.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/tables.smk"


# The store's sentinel is a target itself: after a failed aggregation (sentinel deleted, the last
# good store kept) the next run aggregates again, regenerating any result file removed meanwhile.
rule all:
    default_target: True
    input:
        STORE_DONE,
        FIGURES,
        VALIDATION,
        TABLES,

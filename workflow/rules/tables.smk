# The markdown tables of a run, results/tables/<name>.md (slrpipe.analysis.tables.TABLES: per-point
# verdicts, the count per verdict, the 1RSB points), from the comparison's rows (results/validation.json,
# rule validate); a config without a comparison gets each table as one sentence saying so.
from slrpipe.analysis.tables import TABLES as TABLE_NAMES

TABLES = [f"results/tables/{name}.md" for name in TABLE_NAMES]


rule tables:
    input:
        rows=VALIDATION_ROWS,
    output:
        TABLES,
    log:
        "results/logs/tables.log",
    benchmark:
        "results/benchmarks/tables.tsv"
    localrule: True
    params:
        rows=" ".join(f"--validation {p}" for p in VALIDATION_ROWS),
    shell:
        f"{SLRPIPE} tables {{params.rows}} --out results/tables > {{log}} 2>&1"

"""ERM training of the attention estimators and its metrics (docs/model.md §5)."""

from slrpipe.train.erm import ERMResult, minimize, objective
from slrpipe.train.experiment import init_model, run_erm
from slrpipe.train.metrics import gram, overlaps, streamed_error, streamed_errors
from slrpipe.train.options import ERMOptions, SolverOptions

__all__ = [
    "ERMOptions",
    "ERMResult",
    "SolverOptions",
    "gram",
    "init_model",
    "minimize",
    "objective",
    "overlaps",
    "run_erm",
    "streamed_error",
    "streamed_errors",
]

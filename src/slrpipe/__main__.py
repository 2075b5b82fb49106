"""``python -m slrpipe``: the CLI through a given interpreter (what the workflow's rules run).

The process ends by ``os._exit`` once every exit handler has run (streams flushed, logging shut
down): the interpreter's own teardown (freeing thousands of modules and the XLA client) took
~0.8 s of every job and wrote nothing. Every output is closed and renamed into place before
``main`` returns (:mod:`slrpipe.io`). The exit status is ``main``'s, or 1 after an uncaught
exception (its traceback printed first, as usual).
"""

import atexit
import os
import sys

_status = [1]


@atexit.register  # registered before anything else imports, so it runs after every other handler
def _leave() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or broken pipe: nothing left to write
            pass
    os._exit(_status[0])


from slrpipe.cli import main  # noqa: E402  (after the exit handler, which must be the first)

_status[0] = main()
sys.exit(_status[0])

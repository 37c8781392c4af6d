"""Graders that misbehave on purpose, registered only inside a test pool's workers.

Imported by worker processes through audit.graders.budget.EXTRA_MODULES_ENV, never by the test process,
so they never enter the caller's registry or the lock file.
"""

import os
import signal
import time

from audit.graders import Judgment, register


@register("test.sleepy", "1", description="sleeps in Python: the soft alarm interrupts it", isolated=True)
def sleepy(answer, reference, *, num_choices=None):
    time.sleep(float(answer))
    return Judgment(True, "correct", "woke up")


@register("test.stuck", "1", description="blocks SIGALRM, then sleeps: only a kill stops it", isolated=True)
def stuck(answer, reference, *, num_choices=None):
    if answer == "stuck":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)
    return Judgment(answer == reference, "correct" if answer == reference else "incorrect", "compared")


@register("test.crash", "1", description="exits the worker", isolated=True)
def crash(answer, reference, *, num_choices=None):
    if answer == "crash":
        os._exit(3)
    return Judgment(True, "correct", "fine")


@register("test.raises", "1", description="raises inside the grader", isolated=True)
def raises(answer, reference, *, num_choices=None):
    raise ValueError("boom")


@register("test.crowded", "1", description="slow while other items run in parallel, fast alone", isolated=True)
def crowded(answer, reference, *, num_choices=None):
    # Each call holds a file in AUDIT_TEST_CROWD_DIR for 0.2 s; one that finds another file there (an item
    # beside it) sleeps 3 s more, as sympy does on a loaded machine.
    crowd = os.environ["AUDIT_TEST_CROWD_DIR"]
    mine = os.path.join(crowd, str(os.getpid()))
    open(mine, "w").close()
    try:
        time.sleep(0.2)
        if len(os.listdir(crowd)) > 1:
            time.sleep(3)
    finally:
        os.remove(mine)
    return Judgment(answer == reference, "correct" if answer == reference else "incorrect", "compared")

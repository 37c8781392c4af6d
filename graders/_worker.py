"""`python -m audit.graders._worker`: a grading worker process (see audit.graders.budget)."""

from audit import graders
from audit.graders.budget import worker_main

if __name__ == "__main__":
    worker_main(graders.get, graders.all_graders)

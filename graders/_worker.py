"""`python -m audit.graders._worker`: a grading worker process (see audit.graders.budget)."""

from audit.graders.budget import worker_main

from audit import graders

if __name__ == "__main__":
    worker_main(graders.get, graders.all_graders)

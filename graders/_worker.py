"""`python -m graders._worker`: a grading worker process (see graders.budget)."""

from graders.budget import worker_main

if __name__ == "__main__":
    worker_main()

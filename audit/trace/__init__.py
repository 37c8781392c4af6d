"""`audit trace`: where a step's time goes, from PyTorch profiler (Kineto) traces."""

DEFAULT_STEP_MARKER = r"^ProfilerStep#\d+$"
"""PyTorch's `torch.profiler.profile.step()` annotation. Here, not in `analyze` (numpy), so that the
CLI can show it as a default without loading the analysis."""

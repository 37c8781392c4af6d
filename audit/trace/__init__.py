"""`audit trace`: where a step's time goes, from PyTorch profiler (Kineto) traces."""

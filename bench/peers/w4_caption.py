"""Workload W4 in PyTorch, the peer of bench/w4_caption.cpp: runs the W4-soft,W4-hard case(s) of
torch_workloads.py (the reference implementation of docs/WORKLOADS.md)
at 1 and 2 threads, each in its own process, in the tuned configuration
(bench/run.sh sets the environment it describes), at most ~30 s of timed steps
(at least 5) per case; prints its JSON lines with
"peer":"torch-<version>"."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.exit(subprocess.call([sys.executable, os.path.join(HERE, "torch_workloads.py"), "W4-soft", "W4-hard", "--config", "tuned", "--budget", "30"]))

"""milp-diff: differential testing of rkmate's MILP solver against HiGHS.

model.py (the model, its MPS writer and reader, the solution check),
generators.py (the families), oracle.py (HiGHS), harness.py (the run)."""

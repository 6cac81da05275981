"""rk_cli.py — the `rkmate` binary as the exec tests call it: RKMATE (from the
environment, as meson passes it) and rk(), which runs it and checks the exit
status when asked."""
import os
import subprocess

RKMATE = os.environ.get("RKMATE", "rkmate")


def rk(*args, check=None):
    p = subprocess.run([RKMATE, *args], capture_output=True, text=True)
    if check is not None and p.returncode != check:
        raise AssertionError(f"rkmate {' '.join(args)} exited {p.returncode}, expected {check}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p

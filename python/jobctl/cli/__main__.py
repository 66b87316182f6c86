"""`python -m jobctl.cli`: the same as the `jobctl` console script."""

from jobctl.cli import main

main(prog_name="jobctl")

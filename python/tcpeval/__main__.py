"""`python -m tcpeval`: the command line, as the `tcpeval` script runs it."""

from tcpeval.cli import main

main()

from gpulint.cli import entry

entry()

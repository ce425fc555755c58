from pddplan.cli import run

run()

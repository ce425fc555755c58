from pddplan.cli import main

main()

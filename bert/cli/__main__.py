from bert.cli import main

main()

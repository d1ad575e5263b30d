from mcpctl.cli import main

main()

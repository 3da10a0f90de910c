from rota.cli.main import main

main()
